"""The ``corpustok`` command: ``args`` (the parser: subcommands, options, help, each command's
function set as its default), ``entry`` (``main``: parse and dispatch; ``run``: the console
script), ``commands`` (what each subcommand does, and the exit code of what it raises) and
``logs`` (where Beam's and the workers' output go while a command runs)."""
from corpustok.pipeline.cli.entry import main, run

__all__ = ["main", "run"]
