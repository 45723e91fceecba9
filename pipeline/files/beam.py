"""Remote paths (``gs://``, ``s3://``, ``hdfs://``, ``azfs://``, any scheme Beam knows, with
its extra installed) through ``apache_beam.io.filesystems.FileSystems``, so the same job runs
on Dataflow, Flink or Spark with inputs and outputs in object storage.

Every failure of a remote call, whatever the client library raises, surfaces as an
``OSError`` naming the path, so readers count it as an unreadable input; errors of our own
code around those calls are left as they are (they are bugs, not unreadable files).
"""
import functools
import io
import os
import tempfile
from contextlib import contextmanager

import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from corpustok.pipeline.files.compression import open_binary
from corpustok.pipeline.files.local import PARQUET_BUFFER


def _fs():
    return FileSystems


def _uncompressed():
    return CompressionTypes.UNCOMPRESSED


@contextmanager
def remote_call(path):
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

    def __init__(self, path, f, writing=False):
        self._path = path
        self._f = f
        self._writing = writing

    def readable(self):
        return not self._writing

    def writable(self):
        return self._writing

    def seekable(self):
        return not self._writing

    def readinto(self, buf):
        with remote_call(self._path):
            data = self._f.read(len(buf))
        buf[:len(data)] = data
        return len(data)

    def write(self, data):
        with remote_call(self._path):
            self._f.write(data)
        return len(data)

    def seek(self, offset, whence=io.SEEK_SET):
        with remote_call(self._path):
            return self._f.seek(offset, whence)

    def tell(self):
        with remote_call(self._path):
            return self._f.tell()

    def close(self):
        if not self.closed:
            with remote_call(self._path):
                self._f.close()
        super().close()


@functools.lru_cache(maxsize=4096)
def remote_identity(path):
    """Read once per process: each read is a request, and shard names need it often."""
    meta = _metadata(path)
    return f"{path}\0{meta.size_in_bytes}\0{meta.last_updated_in_seconds}"


def _metadata(path):
    """Beam ``FileMetadata`` of exactly ``path`` (no glob expansion: names may hold ``[``)."""
    with remote_call(path):
        return _fs().get_filesystem(path).metadata(path)


class BeamFiles:
    """Files behind Beam's ``FileSystems``: the same methods as ``LocalFiles``."""

    def join(self, folder, *names):
        return _fs().join(folder, *names)

    def split(self, path):
        return tuple(path.rsplit("/", 1))

    def match(self, pattern):
        """Beam's globs: ``*`` stays within a folder level, ``**`` crosses levels."""
        if self.exists(pattern):
            return [pattern]
        with remote_call(pattern):
            return sorted(m.path for m in _fs().match([pattern])[0].metadata_list)

    def file_key(self, path):
        return path

    def identity(self, path):
        return remote_identity(path)

    def open_read(self, path):
        with remote_call(path):
            f = _fs().open(path, compression_type=_uncompressed())
        return io.BufferedReader(_Guarded(path, f), 1 << 20)

    @contextmanager
    def open_lines(self, path, on_bytes=None):
        with self.open_read(path) as raw, open_binary(path, raw, on_bytes) as f:
            yield f

    @contextmanager
    def parquet_file(self, path):
        with self.open_read(path) as raw, pq.ParquetFile(raw, buffer_size=PARQUET_BUFFER) as pf:
            yield pf

    def size(self, path):
        return _metadata(path).size_in_bytes

    def exists(self, path):
        with remote_call(path):
            return _fs().exists(path)

    def _has_dirs(self, path):
        with remote_call(path):
            return _fs().get_filesystem(path).has_dirs()

    def makedirs(self, folder):
        """Nothing to do on object stores."""
        if self._has_dirs(folder) and not self.exists(folder):
            with remote_call(folder):
                _fs().mkdirs(folder)

    def listdir(self, folder):
        prefix = self.join(folder, "")
        with remote_call(folder):  # Beam's * stops at "/": only this level
            found = _fs().match([prefix + "*"])[0].metadata_list
        return sorted(m.path[len(prefix):] for m in found)

    def listdir_all(self, folder):
        """The objects at this level (an object store has no folders to list)."""
        return self.listdir(folder)

    def is_dir(self, path):
        return bool(self.listdir(path))

    def remove(self, paths):
        if paths:
            with remote_call(paths[0]):
                _fs().delete(list(paths))

    def publishes_whole(self, path):
        """Object stores publish an object only when its upload completes; HDFS has folders
        and shows a file while it is written."""
        return not self._has_dirs(path)

    def create(self, path):
        with remote_call(path):
            f = _fs().create(path, compression_type=_uncompressed())
        return io.BufferedWriter(_Guarded(path, f, writing=True), 1 << 20)

    def replace(self, tmp, path):
        """HDFS renames only onto a free name."""
        if self.exists(path):
            self.remove([path])
        with remote_call(path):
            _fs().rename([tmp], [path])

    def sync(self, f):
        """Nothing to force: the filesystem's own client decides when written data is
        durable."""

    def sync_folder(self, folder):
        """Nothing to force (see :meth:`sync`)."""

    @contextmanager
    def local_copy(self, path):
        """A temporary local copy (removed afterwards), for readers that need a real file."""
        base = path.rsplit("/", 1)[-1]
        with tempfile.TemporaryDirectory(prefix="corpustok-") as tmp:
            local = os.path.join(tmp, base)
            with self.open_read(path) as src, open(local, "wb") as f:
                f.write(src.read())
            yield local
