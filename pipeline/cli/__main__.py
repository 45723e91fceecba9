"""``python -m corpustok.pipeline.cli``: the ``corpustok`` command."""
import sys

from corpustok.pipeline.cli.entry import run

sys.exit(run())
