"""The local filesystem as the jobs see it: plain ``os`` calls and pyarrow's own file reading
(faster than a Python file object; Beam is never imported for local paths).

Same methods as :class:`corpustok.pipeline.files.beam.BeamFiles`; ``files.filesystem(path)``
picks one of the two, once per call, by the path's scheme.
"""
import fnmatch
import glob
import os
from contextlib import contextmanager

from corpustok.pipeline.files.compression import open_binary

PARQUET_BUFFER = 1 << 20  # column chunks are read through this buffer, not whole


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8: False when it holds lone surrogates (a file
    name that is not UTF-8, a JSON ``"\\udc80"`` escape). Arrow strings and pyarrow's own
    file opening need it."""
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


class LocalFiles:
    """Files on this machine's filesystem."""

    def join(self, folder, *names):
        return os.path.join(folder, *names)

    def split(self, path):
        return os.path.split(path)

    def match(self, pattern):
        if os.path.isfile(pattern):
            return [pattern]
        if not glob.has_magic(pattern):
            return []
        found = _walk_glob(pattern) if "**" in pattern else glob.glob(pattern)
        return sorted(f for f in found if os.path.isfile(f))

    def file_key(self, path):
        """Device and inode (hard and symbolic links are one file), the real path if the
        file cannot be seen."""
        try:
            st = os.stat(path)
            return (st.st_dev, st.st_ino)
        except OSError:
            return os.path.realpath(path)

    def identity(self, path):
        try:
            st = os.stat(path)
            return f"{os.path.abspath(path)}\0{st.st_size}\0{st.st_mtime_ns}"
        except OSError:
            return os.path.abspath(path)

    def open_read(self, path):
        return open(path, "rb")

    @contextmanager
    def open_lines(self, path, on_bytes=None):
        with open_binary(path, on_bytes=on_bytes) as f:
            yield f

    @contextmanager
    def parquet_file(self, path):
        import pyarrow.parquet as pq  # here: only for Parquet inputs
        source = path if is_utf8(path) else open(path, "rb")  # pyarrow opens UTF-8 names only
        try:
            with pq.ParquetFile(source, buffer_size=PARQUET_BUFFER) as pf:
                yield pf
        finally:
            if source is not path:
                source.close()

    def size(self, path):
        return os.path.getsize(path)

    def exists(self, path):
        return os.path.exists(path)

    def makedirs(self, folder):
        os.makedirs(folder, exist_ok=True)

    def listdir(self, folder):
        if not os.path.isdir(folder):
            return []
        with os.scandir(folder) as it:  # file types from the directory itself: no stat per name
            return sorted(e.name for e in it if e.is_file())

    def listdir_all(self, folder):
        return sorted(os.listdir(folder)) if os.path.isdir(folder) else []

    def is_dir(self, path):
        return os.path.isdir(path)

    def remove(self, paths):
        for p in paths:
            if os.path.exists(p):
                os.remove(p)

    def publishes_whole(self, path):
        """Whether a new file appears only once written (object stores); a local file is
        visible while it is written, so it goes to a temporary name first."""
        return False

    def create(self, path):
        return open(path, "wb")

    def replace(self, tmp, path):
        os.replace(tmp, path)

    def sync(self, f):
        """Force a written file's data to disk (before a rename makes it a record)."""
        os.fsync(f.fileno())

    def sync_folder(self, folder):
        """Force a folder's entries (a rename into it) to disk."""
        fd = os.open(folder or ".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    @contextmanager
    def local_copy(self, path):
        yield path


def _walk_glob(pattern):
    """Files matching a pattern with ``**``, which crosses folder levels but, as bash's
    globstar, never enters a symbolic link to a folder: Python's glob follows them, and two
    symlink loops made it list paths without end."""
    parts = pattern.split(os.sep)
    k = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    root = os.sep.join(parts[:k]) or (os.sep if pattern.startswith(os.sep) else "")
    pats = parts[k:]
    found = []
    for folder, _, names in os.walk(root or ".", followlinks=False):
        rel = os.path.relpath(folder, root or ".")
        prefix = [] if rel == "." else rel.split(os.sep)
        found.extend(os.path.normpath(os.path.join(folder, n)) for n in names
                     if glob_parts_match(pats, prefix + [n]))
    return found


def glob_parts_match(pats, parts):
    """Whether path components ``parts`` match glob components ``pats`` (``**``: any number
    of folders; a name starting with a dot only matches a component that does too): the one
    glob rule of local and remote paths (``beam.BeamFiles.match`` filters its listing with
    it)."""
    if not pats:
        return not parts
    if pats[0] == "**":
        return any(glob_parts_match(pats[1:], parts[i:]) for i in range(len(parts) + 1)
                   if not any(p.startswith(".") for p in parts[:i]))
    if not parts or (parts[0].startswith(".") and not pats[0].startswith(".")):
        return False
    return fnmatch.fnmatchcase(parts[0], pats[0]) and glob_parts_match(pats[1:], parts[1:])
