"""Entry point of a local worker process: Beam's ``sdk_worker_main``, started so that it dies
with the driver.

The driver's launcher (``workers._WorkerLauncher``) runs ``python -m
corpustok.pipeline.runtime.worker_main`` in place of Beam's module, as a direct child. It
imports nothing of corpustok but ``runtime.startup`` (``workers`` imports it). The parent-death
signal is set here, in the worker itself: set by the launcher, it would need a ``preexec_fn``,
which makes ``subprocess`` fork instead of vfork, and a fork of the driver while its gRPC
threads run crashed some workers at start (a job that then never ended).
"""
import gc
import os
import runpy
import signal
import sys

from corpustok.pipeline.runtime.startup import skip_numba_extensions

BEAM_WORKER = "apache_beam.runners.worker.sdk_worker_main"
# The collector's thresholds in a worker: a young collection every 50,000 allocations, not
# every 700. A worker's start-up (Beam, Numba, the tokenizer) makes hundreds of thousands of
# long-lived objects, and each collection while they appear walks them again (the driver
# pauses it for its start-up instead: runtime.startup, which a worker has no end of).
WORKER_GC_THRESHOLDS = (50_000, 20, 100)
WORKER_MARK = "CORPUSTOK_DRIVER_PID"  # environment: the pid of the driver that started us


def die_with_parent():
    """SIGKILL this process when its parent ends (Linux ``prctl(PR_SET_PDEATHSIG)``); exit now
    if the driver is already gone (it may end before the call)."""
    try:
        import ctypes  # here: only in the worker, only on Linux
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return  # not Linux: the worker ends when its gRPC channels close
    if str(os.getppid()) != os.environ.get(WORKER_MARK):
        os._exit(1)


if __name__ == "__main__":
    die_with_parent()
    gc.set_threshold(*WORKER_GC_THRESHOLDS)
    skip_numba_extensions()
    sys.argv[0] = BEAM_WORKER
    runpy.run_module(BEAM_WORKER, run_name="__main__", alter_sys=True)
