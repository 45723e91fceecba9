"""Paths of the tokenize and train jobs: local files, or any ``scheme://`` Apache Beam knows.

Remote paths (``gs://``, ``s3://``, ``hdfs://``, ``azfs://`` with the matching Beam extra
installed) go through ``apache_beam.io.filesystems.FileSystems``, so the same job runs on
Dataflow, Flink or Spark with inputs and outputs in object storage. Local paths keep plain
``os`` calls and pyarrow's own file reading (faster than a Python file object, and Beam is not
imported by the local paths).

Guarantees kept for both: a file is either absent or whole (local and HDFS: a temporary name,
then a rename; object stores, whose objects appear only when the upload completes: written in
place); every failure of a remote operation, whatever the client library raises, surfaces as
an ``OSError`` naming the path, so readers count it as an unreadable input instead of failing
the job.
"""
import fnmatch
import functools
import glob
import io
import os
import re
import uuid
from contextlib import contextmanager

from corpustok.pipeline.compression import open_binary

TMP_PREFIX = ".tmp-corpustok-"  # + run id + "-": a run deletes only temporaries it can name
PARQUET_BUFFER = 1 << 20
_SCHEME = re.compile(r"[a-zA-Z][-a-zA-Z0-9+.]*://")  # what Beam's FileSystems calls a scheme


def is_remote(path: str) -> bool:
    return bool(_SCHEME.match(path))


def _fs():
    from apache_beam.io.filesystems import FileSystems
    return FileSystems


def _uncompressed():
    from apache_beam.io.filesystem import CompressionTypes
    return CompressionTypes.UNCOMPRESSED


def use_options(options):
    """Give Beam's filesystems the job's pipeline options (credentials, endpoints), which
    s3://, hdfs:// and azfs:// need before the pipeline itself is built."""
    _fs().set_options(options)


@contextmanager
def _remote(path):
    """Re-raise any non-OSError of a remote call (google.api_core NotFound, S3ClientError...)
    as an OSError naming ``path``."""
    try:
        yield
    except OSError:
        raise
    except Exception as e:  # noqa: BLE001 - client libraries raise their own types
        raise OSError(f"{path}: {type(e).__name__}: {e}") from e


class _Guarded(io.RawIOBase):
    """A remote file object as a raw stream whose errors are OSErrors; wrapped in a
    BufferedReader it gives real buffering (some clients read lines a byte at a time)."""

    def __init__(self, path, f):
        self._path = path
        self._f = f

    def readable(self):
        return True

    def seekable(self):
        return True

    def readinto(self, buf):
        with _remote(self._path):
            data = self._f.read(len(buf))
        buf[:len(data)] = data
        return len(data)

    def seek(self, offset, whence=io.SEEK_SET):
        with _remote(self._path):
            return self._f.seek(offset, whence)

    def tell(self):
        with _remote(self._path):
            return self._f.tell()

    def close(self):
        if not self.closed:
            with _remote(self._path):
                self._f.close()
        super().close()


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8: False when it holds lone surrogates (a file
    name that is not UTF-8, a JSON ``"\\udc80"`` escape). Arrow strings and pyarrow's own
    file opening need it."""
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def shown(path: str) -> str:
    """``path`` as text that UTF-8 can hold (manifests, Arrow columns, messages): a name
    holding bytes that are not UTF-8 (read by Python as lone surrogates) shows them as
    ``\\xNN``. :func:`unshown` maps it back."""
    if is_utf8(path):
        return path
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def unshown(text: str) -> str:
    """The path :func:`shown` made ``text`` from: ``text`` itself when such a file exists,
    else with its ``\\xNN`` escapes turned back into the bytes they stand for."""
    if is_remote(text) or "\\x" not in text or os.path.exists(text):
        return text
    return re.sub(r"\\x([89a-f][0-9a-f])", lambda m: chr(0xDC00 + int(m.group(1), 16)), text)


def join(folder: str, *names: str) -> str:
    return _fs().join(folder, *names) if is_remote(folder) else os.path.join(folder, *names)


def match(pattern: str) -> list:
    """Files matching ``pattern``, sorted: the file itself when one has exactly that name
    (names may hold ``[``), else the glob's matches. Remote globs follow Beam (``*`` stays
    within a folder level, ``**`` crosses levels)."""
    if is_remote(pattern):
        if exists(pattern):
            return [pattern]
        with _remote(pattern):
            return sorted(m.path for m in _fs().match([pattern])[0].metadata_list)
    if os.path.isfile(pattern):
        return [pattern]
    if not glob.has_magic(pattern):
        return []
    found = _walk_glob(pattern) if "**" in pattern else glob.glob(pattern)
    return sorted(f for f in found if os.path.isfile(f))


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
                     if _parts_match(pats, prefix + [n]))
    return found


def _parts_match(pats, parts):
    """Whether path components ``parts`` match glob components ``pats`` (``**``: any number
    of folders; a name starting with a dot only matches a component that does too)."""
    if not pats:
        return not parts
    if pats[0] == "**":
        return any(_parts_match(pats[1:], parts[i:]) for i in range(len(parts) + 1)
                   if not any(p.startswith(".") for p in parts[:i]))
    if not parts or (parts[0].startswith(".") and not pats[0].startswith(".")):
        return False
    return fnmatch.fnmatchcase(parts[0], pats[0]) and _parts_match(pats[1:], parts[1:])


def file_key(path):
    """What makes two paths one file: device and inode for a local file (hard and symbolic
    links too), its real path if it cannot be seen; a remote path itself."""
    if is_remote(path):
        return path
    try:
        st = os.stat(path)
        return (st.st_dev, st.st_ino)
    except OSError:
        return os.path.realpath(path)


def _metadata(path):
    """Beam ``FileMetadata`` of exactly ``path`` (no glob expansion: names may hold ``[``)."""
    with _remote(path):
        return _fs().get_filesystem(path).metadata(path)


@functools.lru_cache(maxsize=4096)
def _remote_identity(path):
    meta = _metadata(path)
    return f"{path}\0{meta.size_in_bytes}\0{meta.last_updated_in_seconds}"


def identity(path: str) -> str:
    """Absolute path, size and modification time: changes whenever the file's content may
    have. Local: the absolute path alone if the file cannot be seen. Remote: read once per
    process (each read is a request; shard names need it several times per shard)."""
    if is_remote(path):
        return _remote_identity(path)
    try:
        st = os.stat(path)
        return f"{os.path.abspath(path)}\0{st.st_size}\0{st.st_mtime_ns}"
    except OSError:
        return os.path.abspath(path)


def open_read(path: str):
    """A buffered binary file object of ``path`` as stored (no decompression)."""
    if is_remote(path):
        with _remote(path):
            f = _fs().open(path, compression_type=_uncompressed())
        return io.BufferedReader(_Guarded(path, f), 1 << 20)
    return open(path, "rb")


@contextmanager
def open_lines(path: str):
    """A binary, line-iterable stream of ``path``, decompressed by suffix (``.gz``, ``.xz``,
    ``.zst``); the remote file object is closed with it."""
    if not is_remote(path):
        with open_binary(path) as f:
            yield f
        return
    with open_read(path) as raw, open_binary(path, raw) as f:
        yield f


@contextmanager
def parquet_file(path: str):
    """A ``pyarrow.parquet.ParquetFile`` of ``path``: pyarrow's own reader for a local path,
    a Beam file object (closed afterwards) for a remote one. Column chunks are read through a
    1 MB buffer rather than whole (pyarrow's default), so a huge row group streams."""
    import pyarrow.parquet as pq
    if not is_remote(path) and is_utf8(path):
        with pq.ParquetFile(path, buffer_size=PARQUET_BUFFER) as pf:
            yield pf
        return
    with open_read(path) as raw, pq.ParquetFile(raw, buffer_size=PARQUET_BUFFER) as pf:
        yield pf


def read_bytes(path: str) -> bytes:
    with open_read(path) as f:
        return f.read()


def size(path: str) -> int:
    """Size in bytes; OSError when ``path`` does not exist."""
    return _metadata(path).size_in_bytes if is_remote(path) else os.path.getsize(path)


def exists(path: str) -> bool:
    if is_remote(path):
        with _remote(path):
            return _fs().exists(path)
    return os.path.exists(path)


def _has_dirs(path):
    with _remote(path):
        return _fs().get_filesystem(path).has_dirs()


def makedirs(folder: str):
    """Create ``folder`` (and parents) if missing; nothing to do on object stores."""
    if not is_remote(folder):
        os.makedirs(folder, exist_ok=True)
    elif _has_dirs(folder) and not exists(folder):
        with _remote(folder):
            _fs().mkdirs(folder)


def listdir(folder: str) -> list:
    """Names (not paths) of the files directly in ``folder``; empty if it does not exist.
    Listing errors are raised, never taken for an empty folder."""
    if is_remote(folder):
        prefix = join(folder, "")
        with _remote(folder):  # Beam's * stops at "/": only this level
            found = _fs().match([prefix + "*"])[0].metadata_list
        return sorted(m.path[len(prefix):] for m in found)
    if not os.path.isdir(folder):
        return []
    with os.scandir(folder) as it:  # file types from the directory itself: no stat per name
        return sorted(e.name for e in it if e.is_file())


def remove(paths):
    """Delete ``paths`` (files that exist)."""
    paths = list(paths)
    remote = [p for p in paths if is_remote(p)]
    if remote:
        with _remote(remote[0]):
            _fs().delete(remote)
    for p in paths:
        if not is_remote(p) and os.path.exists(p):
            os.remove(p)


def temp_prefix(run_id: str) -> str:
    """Start of the names of the temporaries a run writes: :data:`TMP_PREFIX` and its id."""
    return f"{TMP_PREFIX}{run_id}-"


def write_atomic(path: str, write, run_id=None):
    """Call ``write(f)`` with a binary file object so that ``path`` is either as before or
    whole: an object store publishes an object only when its upload completes, so the bytes
    are gathered in memory (a shard: tens of MB) and uploaded in place; a local or HDFS file
    goes to a temporary name first (carrying ``run_id``, so that a later run can tell a
    killed run's temporaries from anyone else's files), then is renamed (HDFS renames only
    onto a free name). Whatever fails, no temporary stays."""
    remote = is_remote(path)
    if remote and not _has_dirs(path):
        buf = io.BytesIO()  # a failed write must not close (and so publish) a partial upload
        write(buf)
        with _remote(path):
            with _fs().create(path, compression_type=_uncompressed()) as f:
                f.write(buf.getbuffer())
        return
    folder, base = path.rsplit("/", 1) if remote else os.path.split(path)
    tag = run_id or f"pid{os.getpid()}"
    tmp = join(folder, f"{temp_prefix(tag)}{base}.{uuid.uuid4().hex[:8]}")
    try:
        if remote:
            with _remote(path):
                with _fs().create(tmp, compression_type=_uncompressed()) as f:
                    write(f)
                if exists(path):
                    remove([path])
                _fs().rename([tmp], [path])
        else:
            with open(tmp, "wb") as f:
                write(f)
            os.replace(tmp, path)
    except BaseException:
        try:
            if exists(tmp):
                remove([tmp])
        except OSError:
            pass  # the original error is the one to report
        raise


@contextmanager
def local_copy(path: str):
    """``path`` itself when local, else a temporary local copy (removed afterwards): for
    readers that need a real file, such as the tokenizer loaders."""
    if not is_remote(path):
        yield path
        return
    import tempfile
    base = path.rsplit("/", 1)[-1]
    with tempfile.TemporaryDirectory(prefix="corpustok-") as tmp:
        local = os.path.join(tmp, base)
        with open(local, "wb") as f:
            f.write(read_bytes(path))
        yield local
