"""The ``corpustok`` command line: ``main`` parses the arguments (``args``), runs the
subcommand's function (``commands``, set by ``args`` with ``set_defaults(func=...)``) and maps
what it raises to the exit code (``commands.exit_code``).

Exit codes (by exception type): 0 success; 1 the job completed but some input could not be
read, or more rows were rejected than ``--max-reject-fraction`` allows (named in the summary
and in manifest.json); 2 bad arguments (an option given twice included) or input, a tokenizer
file that cannot be used, an output folder in use or holding another job (one line on
stderr); 3 the job failed (a Beam worker or an unexpected error: traceback on stderr); 4 the
output cannot be written (read-only, no permission, disk or quota full: one line); 130/143
interrupted by SIGINT/SIGTERM (one line; rerunning the same command resumes). Beam is
imported only by the commands that run a pipeline, so ``encode``/``decode``/``--help`` start
fast.
"""
import gc
import logging
import sys

from corpustok.pipeline.files import use_options
from corpustok.pipeline.runtime.startup import (note_process_start, skip_numba_extensions,
                                                skip_s3_client, skip_unused_packages,
                                                start_up_collector, started)
from corpustok.pipeline.runtime.workers import process_env_defaults, quiet_optional_deps


def main(argv=None, handle_signals=False, console=False):
    """Entry point of the ``corpustok`` command; returns the exit code. ``handle_signals``:
    SIGINT and SIGTERM end the process with one line; ``console``: a local job's process
    does not load Beam's S3 client where it cannot need it (:func:`skip_s3_client`). Both
    for the console script, not for callers that run it inside their own process."""
    process_env_defaults()  # before anything loads pyarrow: see pipeline.runtime.workers
    # Here, after it: the parser and the commands import pyarrow.
    from corpustok.pipeline.cli.args import GIVEN, build_parser
    from corpustok.pipeline.cli.commands import exit_code, on_interrupt
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    vars(args).pop(GIVEN, None)
    if getattr(args, "verbose", False):
        logging.basicConfig(level=logging.INFO)
    else:
        quiet_optional_deps()
    if extra and not args.beam_args:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if console:
        skip_s3_client(args, sys.argv[1:] if argv is None else list(argv))
    if handle_signals:
        on_interrupt(args.command, args.out if args.command == "tokenize" else None)
    if extra and args.beam_args:  # remote inputs are matched before the job builds its options
        use_options(extra)
    run_command = args.func
    del args.func, args.beam_args
    if args.command != "tokenize":
        started()  # only a tokenize job's start-up is long; it says when it is over
    try:
        return run_command(args, extra)
    except Exception as e:  # noqa: BLE001 - the one place that maps errors to exit codes
        return exit_code(args.command, e)


def run():
    """The console script: :func:`main` with Python's cyclic garbage collector paused while
    the process starts (:func:`start_up_collector`), then ``gc.freeze()`` as the process is
    about to end, so that Python's exit skips walking every Beam and Numba object once more
    (0.1-0.25 s); other packages' Numba extensions are not loaded
    (:func:`skip_numba_extensions`), nor pandas and pymongo, unless a ``--runner`` is named
    (:func:`skip_unused_packages`), nor boto3 where the job cannot need it
    (:func:`skip_s3_client`); the process's environment defaults are set first
    (:func:`process_env_defaults`: numpy's OpenBLAS starts no threads, and Numba's start
    imports numpy); the process's start is noted (:func:`note_process_start`) for the
    job's time line."""
    note_process_start()
    process_env_defaults()
    with start_up_collector():
        skip_numba_extensions()
        skip_unused_packages(sys.argv[1:])
        code = main(handle_signals=True, console=True)
    gc.freeze()
    return code

