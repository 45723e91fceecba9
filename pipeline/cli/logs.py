"""Where Beam's log and the local worker processes' output go while a command runs: to
temporary files, kept and named only when a job fails in a way the one-line messages do not
explain (exit 3)."""
import io
import logging
import os
import sys
import threading
from contextlib import contextmanager

from corpustok.pipeline.files import cleanup
from corpustok.pipeline.output.layout import not_writable


def explained(e):
    """Whether ``e`` gets a one-line message (exit 2 or 4) rather than a traceback."""
    return not_writable(e) is not None or isinstance(e, (ValueError, TypeError, OSError))


BEAM_LOGGERS = ("apache_beam", "distributed")  # the runners' loggers: tracebacks of workers


@contextmanager
def beam_log(verbose=False):
    """Beam's and Dask's log records (a worker's failure is logged with its traceback, then
    raised again, which the one-line messages explain) go to a temporary file unless
    ``verbose``: kept and named when the job fails in a way those messages do not explain
    (exit 3), removed otherwise."""
    if verbose:
        yield
        return
    path = cleanup.make("corpustok-beam-", ".log")
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    loggers = [logging.getLogger(name) for name in BEAM_LOGGERS]
    saved = [lg.propagate for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.propagate = False
    stderr = sys.stderr
    sys.stderr = _WorkerTracebacks(stderr, handler.stream)
    keep = False
    try:
        yield
    except Exception as e:
        handler.flush()
        keep = not explained(e) and os.path.getsize(path) > 0
        if keep:
            print(f"corpustok: Beam's log of the failed job is in {path}", file=stderr)
        raise
    finally:
        sys.stderr = stderr
        for lg, propagate in zip(loggers, saved):
            lg.removeHandler(handler)
            lg.propagate = propagate
        handler.close()
        cleanup.release(path, keep)


class _WorkerTracebacks(io.TextIOBase):
    """stderr, but for the tracebacks Beam's worker threads print there themselves
    (``sdk_worker`` prints a failed bundle's before raising it to the driver): those go to
    ``log``, with the line break printed after them."""

    def __init__(self, stream, log):
        self._stream = stream
        self._log = log
        self._diverted = threading.local()

    def write(self, text):
        worker = threading.current_thread() is not threading.main_thread()
        if worker and (text.startswith("Traceback (most recent call last)") or
                       (text == "\n" and getattr(self._diverted, "last", False))):
            self._diverted.last = text != "\n"
            return self._log.write(text)
        self._diverted.last = False
        return self._stream.write(text)

    def flush(self):
        self._stream.flush()

    def isatty(self):
        return self._stream.isatty()

    def fileno(self):
        return self._stream.fileno()


@contextmanager
def worker_log(workers, local_mode, verbose=False):
    """A temporary file for the output of local worker processes (None without any, or with
    ``--verbose``: their output then goes to stderr): kept and named when the job fails in a
    way the one-line messages do not explain (exit 3), removed otherwise."""
    if not workers or workers < 2 or local_mode != "processes" or verbose:
        yield None
        return
    path = cleanup.make("corpustok-workers-", ".log")
    keep = False
    try:
        yield path
    except Exception as e:
        keep = not explained(e) and os.path.getsize(path) > 0
        if keep:
            print(f"corpustok: the worker processes' output is in {path}", file=sys.stderr)
        raise
    finally:
        cleanup.release(path, keep)
