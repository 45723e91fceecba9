"""Local temporary files of this process that a signal must not leave behind.

The command line's SIGINT/SIGTERM handler ends the process at once (``os._exit``: no
``finally`` block or context manager exit runs), so files such as the progress channel and
the worker log are registered here while they exist, and the handler removes them
(:func:`remove_registered`). A module of its own, below everything that makes such files, so
none of them imports the command line.
"""
import os
import tempfile

_REGISTERED = []


def make(prefix, suffix=""):
    """A new empty file in the system's temporary folder, registered; its path."""
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix)
    os.close(fd)
    _REGISTERED.append(path)
    return path


def release(path, keep=False):
    """Unregister ``path`` and remove it (unless ``keep``); a file already gone is fine."""
    if path in _REGISTERED:
        _REGISTERED.remove(path)
    if not keep:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def remove_registered():
    """Remove every registered file (from a signal handler: errors are ignored)."""
    for path in list(_REGISTERED):
        try:
            os.remove(path)
        except OSError:
            pass
