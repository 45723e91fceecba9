"""Named numpy arrays in one ``.npz`` file, as the tokenizers' memos on disk keep their built
tables (:mod:`corpustok.bpe.table_cache`, ``WordPiece(cache=...)``): read back as they were
written, or not at all, and written whole or not at all."""
import os
import tempfile
import zipfile

import numpy as np


def read_arrays(path):
    """``{name: array}`` of the ``.npz`` at ``path``, or None when it is absent or cannot be
    read as one (damaged, truncated, another format)."""
    try:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except (OSError, ValueError, KeyError, EOFError, TypeError, AttributeError,
            zipfile.BadZipFile):
        return None


def write_arrays(path, arrays):
    """Write ``arrays`` (name -> array) to ``path`` under a temporary name in its folder, then
    rename it over ``path``: a reader, another process's included, never sees half a file. An
    OSError (no room, no permission) is raised with nothing left behind."""
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path)[:16] + ".", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:  # a file object: np.savez would append ".npz"
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
