"""Paths of the tokenize and train jobs: local files, or any ``scheme://`` Apache Beam knows.

Remote paths (``gs://``, ``s3://``, ``hdfs://``, ``azfs://`` with the matching Beam extra
installed) go through ``apache_beam.io.filesystems.FileSystems``, so the same job runs on
Dataflow, Flink or Spark with inputs and outputs in object storage. Local paths keep plain
``os`` calls and pyarrow's own file reading (faster than a Python file object, and Beam is not
imported by the local paths). Writes are atomic in both: a temporary name, then a rename, so a
file is either absent or whole.
"""
import glob
import os
import re
import uuid
from contextlib import contextmanager

from corpustok._io import open_binary

TMP_PREFIX = ".tmp-"
_SCHEME = re.compile(r"[a-zA-Z][-a-zA-Z0-9+.]*://")  # what Beam's FileSystems calls a scheme


def is_remote(path: str) -> bool:
    return bool(_SCHEME.match(path))


def _fs():
    from apache_beam.io.filesystems import FileSystems
    return FileSystems


def _uncompressed():
    from apache_beam.io.filesystem import CompressionTypes
    return CompressionTypes.UNCOMPRESSED


def join(folder: str, *names: str) -> str:
    return _fs().join(folder, *names) if is_remote(folder) else os.path.join(folder, *names)


def _metadata(pattern):
    """Beam ``FileMetadata`` of the files matching ``pattern`` (empty when none)."""
    from apache_beam.io.filesystem import BeamIOError
    try:
        return _fs().match([pattern])[0].metadata_list
    except BeamIOError:  # Beam raises, rather than returning nothing, for a missing path
        return []


def match(pattern: str) -> list:
    """Files matching ``pattern`` (a path or a glob), sorted."""
    if is_remote(pattern):
        return sorted(m.path for m in _metadata(pattern))
    found = sorted(glob.glob(pattern, recursive=True)) if glob.has_magic(pattern) else \
        ([pattern] if os.path.exists(pattern) else [])
    return [f for f in found if os.path.isfile(f)]


def identity(path: str) -> str:
    """Absolute path, size and modification time: changes whenever the file's content may
    have; the absolute path alone if the file cannot be seen."""
    if is_remote(path):
        meta = _metadata(path)
        return f"{path}\0{meta[0].size_in_bytes}\0{meta[0].last_updated_in_seconds}" \
            if meta else path
    try:
        st = os.stat(path)
        return f"{os.path.abspath(path)}\0{st.st_size}\0{st.st_mtime_ns}"
    except OSError:
        return os.path.abspath(path)


def open_read(path: str):
    """A binary file object of ``path`` as stored (no decompression)."""
    if is_remote(path):
        return _fs().open(path, compression_type=_uncompressed())
    return open(path, "rb")


def open_lines(path: str):
    """A binary, line-iterable stream of ``path``, decompressed by suffix (``.gz``, ``.xz``,
    ``.zst``)."""
    return open_binary(path, open_read(path) if is_remote(path) else None)


@contextmanager
def parquet_file(path: str):
    """A ``pyarrow.parquet.ParquetFile`` of ``path``: pyarrow's own reader for a local path,
    a Beam file object (closed afterwards) for a remote one."""
    import pyarrow.parquet as pq
    if not is_remote(path):
        with pq.ParquetFile(path) as pf:
            yield pf
        return
    with open_read(path) as raw, pq.ParquetFile(raw) as pf:
        yield pf


def read_bytes(path: str) -> bytes:
    with open_read(path) as f:
        return f.read()


def size(path: str) -> int:
    """Size in bytes; OSError when ``path`` does not exist."""
    if is_remote(path):
        meta = _metadata(path)
        if not meta:
            raise FileNotFoundError(path)
        return meta[0].size_in_bytes
    return os.path.getsize(path)


def exists(path: str) -> bool:
    return _fs().exists(path) if is_remote(path) else os.path.exists(path)


def makedirs(folder: str):
    if is_remote(folder):
        if not _fs().exists(folder):  # object stores have no folders: a no-op there
            _fs().mkdirs(folder)
    else:
        os.makedirs(folder, exist_ok=True)


def listdir(folder: str) -> list:
    """Names (not paths) of the files directly in ``folder``; empty if it does not exist."""
    if is_remote(folder):
        prefix = join(folder, "")
        return sorted(m.path[len(prefix):] for m in _metadata(prefix + "*")
                      if "/" not in m.path[len(prefix):])
    return sorted(f for f in os.listdir(folder) if os.path.isfile(os.path.join(folder, f))) \
        if os.path.isdir(folder) else []


def remove(paths):
    paths = list(paths)
    if not paths:
        return
    remote = [p for p in paths if is_remote(p)]
    if remote:
        _fs().delete(remote)
    for p in paths:
        if not is_remote(p) and os.path.exists(p):
            os.remove(p)


def write_atomic(path: str, write):
    """Call ``write(f)`` with a binary file object, then move the result onto ``path``; the
    temporary is removed if anything fails."""
    folder, base = (path.rsplit("/", 1) if is_remote(path) else os.path.split(path))
    tmp = join(folder, f"{TMP_PREFIX}{base}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
    try:
        if is_remote(path):
            with _fs().create(tmp, compression_type=_uncompressed()) as f:
                write(f)
            _fs().rename([tmp], [path])
        else:
            with open(tmp, "wb") as f:
                write(f)
            os.replace(tmp, path)
    except BaseException:
        try:
            remove([tmp])
        except Exception:  # noqa: BLE001 - the original error is the one to report
            pass
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
