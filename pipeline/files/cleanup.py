"""Local temporary files (and folders) of this process that a signal must not leave behind.

The command line's SIGINT/SIGTERM handler ends the process at once (``os._exit``: no
``finally`` block or context manager exit runs), so files such as the progress channel and
the worker log are registered here while they exist, and the handler removes them
(:func:`remove_registered`). A module of its own, below everything that makes such files, so
none of them imports the command line.
"""
import os
import shutil
import tempfile

_REGISTERED = []


def make(prefix, suffix=""):
    """A new empty file in the system's temporary folder, registered; its path."""
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix)
    os.close(fd)
    register(path)
    return path


def register(path):
    """Register ``path``, a temporary file or folder the caller is about to create."""
    _REGISTERED.append(path)


def _remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def release(path, keep=False):
    """Unregister ``path`` and remove it (unless ``keep``); one already gone is fine."""
    if path in _REGISTERED:
        _REGISTERED.remove(path)
    if not keep:
        try:
            _remove(path)
        except FileNotFoundError:
            pass


def remove_registered():
    """Remove every registered file and folder (from a signal handler: errors are
    ignored)."""
    for path in list(_REGISTERED):
        try:
            _remove(path)
        except OSError:
            pass
