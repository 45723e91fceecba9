"""Remote paths (``gs://``, ``s3://``, ``hdfs://``, ``azfs://``, any scheme Beam knows, with
its extra installed) through ``apache_beam.io.filesystems.FileSystems``, so the same job runs
on Dataflow, Flink or Spark with inputs and outputs in object storage.

Every failure of a remote call, whatever the client library raises, surfaces as an
``OSError`` naming the path, so readers count it as an unreadable input; errors of our own
code around those calls are left as they are (they are bugs, not unreadable files).
"""
import functools
import glob
import io
import os
import re
import tempfile
import threading
from contextlib import contextmanager

import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from corpustok.pipeline.files.compression import open_binary
from corpustok.pipeline.files.local import PARQUET_BUFFER, glob_parts_match

_GLOB_CHARS = re.compile(r"([*?\[\]])")


def _escape(prefix):
    """``prefix`` with the characters Beam's globs read as magic escaped (``[``: a name may
    hold it), so that only what is appended to it is a glob."""
    return _GLOB_CHARS.sub(r"[\1]", prefix)


def _share_s3_clients():
    """Make Beam's S3 filesystem reuse one boto3 client per set of options in a process.
    Beam builds a new boto3 session and client for every call (``S3IO(options=...)`` each
    time): 0.3 s of CPU each, 43 of a 56 s job on 1.7 MB (measured with SeaweedFS, decision
    0036). boto3 clients are thread-safe; each Beam ``Client`` keeps its own download state,
    as before."""
    try:  # here: boto3 comes with the optional aws extra of apache-beam
        from apache_beam.io.aws.clients.s3 import boto3_client  # optional: the aws extra
    except ImportError:
        return
    if getattr(boto3_client.Client, "_corpustok_shared", False):
        return
    built = boto3_client.Client.__init__
    clients = {}
    lock = threading.Lock()

    def init(self, options):
        key = repr(sorted(options.get_all_options(drop_default=True).items())) \
            if hasattr(options, "get_all_options") else repr(sorted(dict(options).items()))
        with lock:
            client = clients.get(key)
            if client is None:
                built(self, options)
                clients[key] = self.client
                return
        self.client = client
        self._download_request = None
        self._download_stream = None
        self._download_pos = 0

    boto3_client.Client.__init__ = init
    boto3_client.Client._corpustok_shared = True


def _fs():
    """Beam's FileSystems, with options: a process that was given none (a Dask worker started
    apart from the job, a script) gets empty ones, so that each client reads its
    environment (boto3: ``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL_S3``, ...) instead of
    failing (Beam's S3 client needs options, even empty)."""
    if FileSystems._pipeline_options is None:
        FileSystems.set_options(PipelineOptions([]))
    return FileSystems


_share_s3_clients()


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
        """The object named ``pattern``, else the glob's matches under the same rule as a
        local glob (``local.glob_parts_match``: ``*`` within a level, ``**`` across levels,
        zero included; hidden names only where the pattern names them): the objects under
        the pattern's fixed prefix are listed once through Beam and filtered here, so
        ``in/**/*`` finds ``in/a.parquet`` as it does locally (Beam's own ``**/*`` would
        not)."""
        if self.exists(pattern):
            return [pattern]
        if not glob.has_magic(pattern):
            return []
        scheme, _, rest = pattern.partition("://")
        parts = rest.split("/")
        k = next(i for i, part in enumerate(parts) if glob.has_magic(part))
        if k == 0:
            raise ValueError(f"{pattern}: a glob in the bucket name is not supported")
        root = f"{scheme}://{'/'.join(parts[:k])}/"
        with remote_call(pattern):
            found = _fs().match([_escape(root) + "**"])[0].metadata_list
        return sorted(m.path for m in found
                      if glob_parts_match(parts[k:], m.path[len(root):].split("/")))
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
            found = _fs().match([_escape(prefix) + "*"])[0].metadata_list
        return sorted(m.path[len(prefix):] for m in found)

    def listdir_all(self, folder):
        """The objects at this level (an object store has no folders to list)."""
        return self.listdir(folder)

    def is_dir(self, path):
        """Whether ``path`` (not a glob) is a prefix holding objects: one listed is enough."""
        if glob.has_magic(path):
            return False
        with remote_call(path):
            found = _fs().match([_escape(self.join(path, "")) + "**"], limits=[1])
        return bool(found[0].metadata_list)

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


_CLIENT = [None, None]  # the options, and a boto3 client built from them


def _s3(path):
    """``(client, bucket, key)`` of an ``s3://`` path; the client is built as Beam's S3
    filesystem builds its own (the same options: endpoint, credentials, region; else boto3's
    environment), once per set of options."""
    if not path.startswith("s3://"):  # files._conditional sends s3:// paths only
        raise ValueError(f"{path}: not an s3:// path")
    bucket, _, key = path[len("s3://"):].partition("/")
    options = _fs()._pipeline_options
    if _CLIENT[0] is not options:
        from apache_beam.io.aws.clients.s3.boto3_client import Client  # s3:// only
        _CLIENT[:] = [options, Client(options=options).client]
    return _CLIENT[1], bucket, key


def _precondition_failed(e):
    """Whether a botocore error is the store refusing a condition (412, or 409 for a
    concurrent conditional write)."""
    code = getattr(e, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code in (409, 412)


def create_new(path, data: bytes):
    """Create object ``path`` holding ``data`` only if no object has that name
    (``If-None-Match: *``): its ETag, or None when one exists. A store that ignores the
    condition cannot be told from here (the lock reads its object back after it)."""
    client, bucket, key = _s3(path)
    try:
        with remote_call(path):
            return client.put_object(Bucket=bucket, Key=key, Body=data,
                                     IfNoneMatch="*")["ETag"]
    except OSError as e:
        if _precondition_failed(e.__cause__):
            return None
        raise


def read_versioned(path):
    """``(data, etag)`` of object ``path``, or None when there is none."""
    client, bucket, key = _s3(path)
    try:
        with remote_call(path):
            r = client.get_object(Bucket=bucket, Key=key)
            return r["Body"].read(), r["ETag"]
    except OSError as e:
        if getattr(e.__cause__, "response", {}).get("Error", {}).get("Code") in \
                ("NoSuchKey", "404"):
            return None
        raise


def replace_if(path, data: bytes, etag):
    """Overwrite object ``path`` with ``data`` only if it is still version ``etag``
    (``If-Match``): the new ETag, or None when it changed or is gone."""
    client, bucket, key = _s3(path)
    try:
        with remote_call(path):
            return client.put_object(Bucket=bucket, Key=key, Body=data, IfMatch=etag)["ETag"]
    except OSError as e:
        if _precondition_failed(e.__cause__) or \
                getattr(e.__cause__, "response", {}).get("Error", {}).get("Code") == "NoSuchKey":
            return None
        raise


def remove_if(path, etag):
    """Delete object ``path`` only if it is still version ``etag``; whether it was."""
    client, bucket, key = _s3(path)
    try:
        with remote_call(path):
            client.delete_object(Bucket=bucket, Key=key, IfMatch=etag)
            return True
    except OSError as e:
        if _precondition_failed(e.__cause__) or \
                getattr(e.__cause__, "response", {}).get("Error", {}).get("Code") == "NoSuchKey":
            return False
        raise
