"""The ``corpustok`` command line (placeholder until the pipeline lands)."""
import sys


def main(argv=None):
    print("corpustok: no command yet", file=sys.stderr)
    return 2
