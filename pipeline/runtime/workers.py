"""The environment of the processes that run a job: the CLI process and Beam's local workers.

Allocator: pyarrow's default pool (mimalloc) returns freed pages to the OS after a short
delay, so every shard faulted its read, token-list and Parquet-write buffers in again (cost in
decision 0019); ``MIMALLOC_PURGE_DELAY=-1`` keeps them, yet mimalloc still handed large
growing buffers fresh pages, most of all in a job's first shards. On Linux the pool is
jemalloc (``ARROW_DEFAULT_MEMORY_POOL``), told to keep what it frees
(``JE_ARROW_MALLOC_CONF``: Arrow builds it to return pages after a second): decision 0045. Peak RSS is still that of one shard per worker. The allocator reads
these when pyarrow loads, so they reach only processes that load pyarrow afterwards: the CLI
process (nothing imports pyarrow before ``main``) and the worker processes a local
multi-process run starts. This module imports nothing heavy for that reason.

Import path: Beam starts local workers with ``python -m ...`` in the caller's folder, which
puts that folder first on ``sys.path``; run next to a clone named ``corpustok``, the workers
would import the clone's folder as a namespace package instead of the installed package.
``PYTHONSAFEPATH=1`` (Python 3.11+) keeps the folder off ``sys.path``.

Garbage collector: a worker holds a few hundred thousand long-lived objects (Beam, Numba, the
tokenizer's vocabulary) that every full collection walks again, and walks once more when the
process exits: 0.25 s per worker, and Beam stops local workers one after the other. Frozen
(``gc.freeze``) once the tokenizer is built, they are skipped: exit takes 0.04 s. Only in the
worker processes a local run starts (they carry the driver's pid in :data:`WORKER_MARK`), never
in the caller's own process, where frozen objects would never be collected.

Lifetime: Beam starts each local worker through ``sh -c``, so a worker was the driver's
grandchild and outlived it: a killed driver left workers writing shards for a while, and
Ctrl-C in a terminal reached every worker (a traceback each). Beam has no option for it, so
:func:`local_workers_env` gives Beam's worker launcher a ``Popen`` that makes the shell
``exec`` the worker (a direct child of the driver) in a session of its own (a terminal's
signals reach the driver alone), through :mod:`~corpustok.pipeline.runtime.worker_main`,
which sets the kernel's parent-death signal to SIGKILL (Linux): a worker ends with the
driver however the driver ends. What it was writing then is a temporary the next run
deletes.

A value the user set is kept.
"""
import gc
import logging
import os
import subprocess
import sys
from contextlib import contextmanager

from corpustok.pipeline.runtime import worker_main
from corpustok.pipeline.runtime.worker_main import BEAM_WORKER, WORKER_MARK

WORKER_MAIN = worker_main.__name__  # what a local worker process runs (python -m)
# The environment of corpustok's own processes, where the user has not set it: Arrow's pool
# as the module docstring says (jemalloc keeping freed pages: fewer fresh pages to zero,
# decision 0045; mimalloc's setting for a user who picks it); gRPC's C core logs an INFO
# line each time a process forks while its threads run (every local worker start), ERROR
# keeps its real failures; numpy's OpenBLAS starts no threads of its own (one a core,
# spinning before they sleep: 0.1 CPU-seconds of every process that imports numpy on a 2-core
# VM, 2026-12-06; corpustok does no linear algebra).
PROCESS_ENV = {"MIMALLOC_PURGE_DELAY": "-1", "GRPC_VERBOSITY": "ERROR",
               "OPENBLAS_NUM_THREADS": "1",
               **({"ARROW_DEFAULT_MEMORY_POOL": "jemalloc",
                   "JE_ARROW_MALLOC_CONF": "dirty_decay_ms:-1,muzzy_decay_ms:-1"}
                  if sys.platform.startswith("linux") else {})}
WORKER_ENV = {**PROCESS_ENV, "PYTHONSAFEPATH": "1"}
# How local workers run, by Beam's name for it: threads of the caller's process (the kernels
# release the GIL; as fast or faster end to end, quicker to start: decision 0018) or
# processes.
LOCAL_MODES = {"threads": "multi_threading", "processes": "multi_processing"}
DEFAULT_LOCAL_MODE = "threads"


def available_cores():
    """CPUs this process may run on (its affinity mask where the OS has one: a container or
    ``taskset`` limit, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def default_workers(sizes, shard_bytes, cores=None):
    """Local workers for inputs of stored ``sizes``: one per core, but no more than the shards
    they give (estimated from the sizes; a worker without a shard only adds start-up)."""
    shards = sum(max(1, -(-size // shard_bytes)) for size in sizes)
    return max(1, min(cores or available_cores(), shards))


def process_env_defaults():
    """Apply :data:`PROCESS_ENV` to this process (to what it loads from now on: pyarrow,
    numpy) and to every process it starts from now on."""
    for key, value in PROCESS_ENV.items():
        os.environ.setdefault(key, value)


class _WorkerLauncher:
    """The ``subprocess`` module as Beam's worker launcher sees it, except that ``Popen`` of
    Beam's worker command execs :mod:`~corpustok.pipeline.runtime.worker_main` in its place
    (a direct child that dies with the driver), in a new session, its output going to ``log``
    (a binary file object) when one is given."""

    def __init__(self, log=None):
        self._log = log

    def __getattr__(self, name):
        return getattr(subprocess, name)

    def Popen(self, args, **kw):  # noqa: N802 - the name Beam calls
        if kw.get("shell") and isinstance(args, str) and args.endswith(f"-m {BEAM_WORKER}"):
            args = "exec " + args[:-len(BEAM_WORKER)] + WORKER_MAIN
        kw.setdefault("start_new_session", True)
        if self._log is not None:
            kw.setdefault("stdout", self._log)
            kw.setdefault("stderr", self._log)
        return subprocess.Popen(args, **kw)


@contextmanager
def local_workers_env(log=None):
    """Apply :data:`WORKER_ENV` to the processes started inside the block only (Beam's local
    workers), leaving the caller's environment as it was; they are started by
    :class:`_WorkerLauncher`, writing their output to the file ``log`` if given (Beam's worker
    prints every failed bundle's traceback, which the driver reports again anyway)."""
    from apache_beam.runners.portability import local_job_service  # here: Beam, on a run
    saved = {key: os.environ.get(key) for key in (*WORKER_ENV, WORKER_MARK)}
    for key, value in WORKER_ENV.items():
        os.environ.setdefault(key, value)
    os.environ[WORKER_MARK] = str(os.getpid())
    launcher = local_job_service.subprocess
    log_file = None if log is None else open(log, "ab")
    local_job_service.subprocess = _WorkerLauncher(log_file)
    try:
        yield
    finally:
        if log_file is not None:
            log_file.close()
        local_job_service.subprocess = launcher
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def freeze_in_local_worker():
    """``gc.freeze()`` when this is a worker process started by a local run (see above)."""
    driver = os.environ.get(WORKER_MARK)
    if driver and driver != str(os.getpid()):
        gc.freeze()



# Beam's import-time notices that optional clients are missing, by the logger that logs them
# and a part of their text: its GCP clients (none of a local run's business), and its MongoDB
# connector's bson, which the console script does not load (``startup.skip_unused_packages``).
# Each reads like an error to a user.
OPTIONAL_NOTICES = {"": "apitools not found", "apache_beam.io.mongodbio": "compatible bson package"}


class _QuietOptionalDeps(logging.Filter):
    """Drops a logger's notice of :data:`OPTIONAL_NOTICES`."""

    def __init__(self, text):
        super().__init__()
        self.text = text

    def filter(self, record):
        return self.text not in record.getMessage()


def quiet_optional_deps():
    """Filter :data:`OPTIONAL_NOTICES` out of their loggers in this process (once): a
    logger's filters see only the records it logs itself."""
    for name, text in OPTIONAL_NOTICES.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _QuietOptionalDeps) for f in logger.filters):
            logger.addFilter(_QuietOptionalDeps(text))


def dask_setup(worker):
    """Run by each worker of the local Dask cluster a job starts (a ``preload`` module): the
    notice would otherwise print once per worker, when its first task imports Beam."""
    quiet_optional_deps()
