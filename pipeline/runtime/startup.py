"""The start-up of a ``corpustok`` process: Python's cyclic garbage collector, what other
packages' optional parts it does not load, and when the process started."""
import gc
import os
import sys
import time
from contextlib import contextmanager

_paused = False  # while start_up_collector has the collector paused
_began = None  # perf_counter() of this process's start, once note_process_start has run
# An age above this when the console script begins is not its start (a clock that does not
# match /proc's, as in some containers): the time line then counts from the job.
PLAUSIBLE_START = 600.0


@contextmanager
def start_up_collector():
    """Pause the cyclic garbage collector until :func:`started` (or the end of the block).

    Start-up imports Beam, pandas, Numba's registries and loads the tokenizer: hundreds of
    thousands of objects that live as long as the process, and each automatic collection
    while they are created walks all of them again (0.4 of a tokenize job's 2.7 CPU-seconds
    of start-up, measured 2026-12-06). Nothing of that makes cycles worth collecting."""
    global _paused
    if not gc.isenabled():
        yield
        return
    gc.disable()
    _paused = True
    try:
        yield
    finally:
        started()


def started():
    """The start-up is over: what it made is frozen (never walked again by a collection) and
    the collector runs as usual from here. Does nothing unless :func:`start_up_collector`
    paused it."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def process_age():
    """Seconds since this process started, from the OS (Linux: ``/proc/self/stat``'s start
    time, in clock ticks since boot, against the boot-time clock; 10 ms steps), or None where
    that is not known."""
    try:
        with open("/proc/self/stat") as f:
            # from field 3 on (the command's name, field 2, may hold spaces and brackets)
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[19])  # field 22: starttime
        now = time.clock_gettime(time.CLOCK_BOOTTIME)
        return max(0.0, now - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def note_process_start():
    """Keep when this process started (:func:`process_age`), for :func:`process_began`.
    The console script calls it: a job's time line then counts Python's start and the imports
    before the job began, which the command's user waits for too."""
    global _began
    age = process_age()
    if age is not None and age < PLAUSIBLE_START:
        _began = time.perf_counter() - age


def process_began():
    """The process's start on the ``time.perf_counter()`` clock, once
    :func:`note_process_start` has run; else None (a program calling the Python API: its
    start is not the job's)."""
    return _began


def skip_numba_extensions():
    """Tell Numba that other packages' extensions (``numba_extensions`` entry points) are
    already loaded, so that its first compilation or cache load does not import them.
    corpustok's kernels use none; an installed package's can be costly (awkward, which
    gigatoken brings: 0.14 s of every job, measured 2026-12-06). For corpustok's own processes
    only: the console script, and the local worker processes any job starts (from the command
    line or the Python API), which run corpustok's steps alone; a program that calls the
    Python API keeps its extensions in its own process. Numba keeps the flag in a private
    global: when it is gone, this does nothing."""
    # here: a local worker imports this module before it raises its collector's thresholds
    # (worker_main), and importing Numba makes the objects those thresholds are for
    from numba.core import entrypoints
    if isinstance(getattr(entrypoints, "_already_initialized", None), bool):
        entrypoints._already_initialized = True


# Packages other packages import at every start where they can, for parts corpustok never
# runs: pandas (Beam's DataFrame API in ``typehints`` and ``io.textio``; pyarrow's first
# ``pa.array``, to recognise pandas objects) and pymongo with its bson (Beam's MongoDB
# connector, ``apache_beam.io.mongodbio``). Each importer goes on without them.
UNUSED_PACKAGES = ("pandas", "pymongo", "bson")
# Beam's S3 filesystem's client where the ``s3`` extra installed it: Beam imports it at every
# start (``apache_beam.io.filesystems`` registers every filesystem it can), 0.2-0.3 s, and
# calls it only for ``s3://`` paths. Skipped by :func:`skip_s3_client` for the commands whose
# every path is one of their arguments.
S3_PACKAGES = ("boto3", "botocore", "s3transfer")
S3_CHECKED_COMMANDS = ("tokenize", "train")


class _Unused:
    """A ``sys.meta_path`` finder through which the packages ``names`` cannot be imported;
    the ImportError names ``by``, the function that installed it."""

    def __init__(self, names, by):
        self.names = frozenset(names)
        self.by = by

    def find_spec(self, name, path=None, target=None):
        if name.split(".", 1)[0] in self.names:
            raise ImportError(f"{name} is not loaded in corpustok's own local processes "
                              f"(pipeline.runtime.startup.{self.by})")
        return None


def _block(names, by):
    """Install an :class:`_Unused` finder for ``names`` (once), unless one of them is loaded
    already."""
    if any(name in sys.modules for name in names) or \
            any(isinstance(f, _Unused) and f.by == by for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Unused(names, by))


def skip_unused_packages(argv=()):
    """Make :data:`UNUSED_PACKAGES` unimportable in this process, unless ``argv`` names a
    ``--runner``.

    Nothing corpustok runs uses them, yet they were imported at every start: pandas 0.3-0.5
    CPU-seconds of each, pymongo and bson 0.04 (measured 2026-12-07). Their importers go on
    without them when the import fails (Beam's MongoDB connector logs a notice, which
    ``workers.quiet_optional_deps`` filters out with Beam's other such notices). For the
    console script only, when it runs a local job (one on another runner builds its pipeline
    with what that runner may need, so they stay); never in a program
    that calls the Python API, nor in the worker processes a job starts (a tokenizer factory
    of the user's may run there). A library that does need one there fails with an
    ImportError that names this function. Nothing changes where one is already loaded."""
    if not _names_runner(argv):
        _block(UNUSED_PACKAGES, "skip_unused_packages")


def skip_s3_client(args, argv):
    """Make :data:`S3_PACKAGES` unimportable in this process when the parsed command ``args``
    is one of :data:`S3_CHECKED_COMMANDS`, is not ``--append`` (which reads the job's earlier
    inputs from its record) and no argument of ``argv`` names an ``s3://`` path (an input,
    ``--out``, ``--tokenizer``, a Beam option) or a ``--runner``: every path such a job opens
    is one of its arguments, so it never calls Beam's S3 client, which Beam imports at every
    start. Beam's S3 filesystem stays registered without its client. For the console script
    only (as :func:`skip_unused_packages`); nothing changes where one is already loaded.
    Other commands (``verify --inputs`` reads paths from a manifest) keep them."""
    if getattr(args, "command", None) in S3_CHECKED_COMMANDS and \
            getattr(args, "mode", None) != "append" and not _names_runner(argv) and \
            not any("s3://" in a for a in argv):
        _block(S3_PACKAGES, "skip_s3_client")


def _names_runner(argv):
    return any(a == "--runner" or a.startswith("--runner=") for a in argv)
