"""Paths of the tokenize and train jobs: local files, or any ``scheme://`` Apache Beam knows.

One interface, two implementations chosen by the path's scheme in :func:`filesystem`:
:class:`~corpustok.pipeline.files.local.LocalFiles` (``os`` and pyarrow) and
:class:`~corpustok.pipeline.files.beam.BeamFiles` (Beam's ``FileSystems``, imported only for
remote paths). The functions here are what the jobs call; they hold the rules both share:
a file is either absent or whole (a temporary name, then a rename; object stores, whose
objects appear only when the upload completes: written in place), and names that are not
UTF-8 are shown with ``\\xNN`` escapes.
"""
import hashlib
import io
import os
import re
import sys
import uuid
from contextlib import contextmanager

from corpustok.pipeline.files.local import LocalFiles, is_utf8

TMP_PREFIX = ".tmp-corpustok-"  # + run id + "-": a run deletes only temporaries it can name
_SCHEME = re.compile(r"[a-zA-Z][-a-zA-Z0-9+.]*://")  # what Beam's FileSystems calls a scheme
_LOCAL = LocalFiles()
_BEAM = None


def is_remote(path: str) -> bool:
    return bool(_SCHEME.match(path))


def filesystem(path: str):
    """The filesystem of ``path``: local, or Beam's for a ``scheme://`` path."""
    global _BEAM
    if not is_remote(path):
        return _LOCAL
    if _BEAM is None:
        from corpustok.pipeline.files.beam import BeamFiles  # here: Beam for remote paths only
        _BEAM = BeamFiles()
    return _BEAM


def use_options(options):
    """Give Beam's filesystems the job's pipeline options (credentials, endpoints), which
    s3://, hdfs:// and azfs:// need before the pipeline itself is built: a
    ``PipelineOptions``, a list of Beam arguments (``--s3_endpoint_url=...``) or None (no
    options: each client then reads its environment, as boto3 does ``AWS_*``)."""
    from apache_beam.io.filesystems import FileSystems  # here: Beam for remote paths only
    if isinstance(options, (list, tuple)):
        from apache_beam.options.pipeline_options import PipelineOptions  # as above
        options = PipelineOptions(list(options))
    FileSystems.set_options(options)


def filesystem_args():
    """The Beam arguments (``--s3_endpoint_url=...``) of the filesystem options this process
    was given, for processes that get no pipeline options of their own (Dask workers: see
    :func:`ensure_options`); empty when none were given or Beam is not loaded."""
    fs = sys.modules.get("apache_beam.io.filesystems")
    options = fs.FileSystems._pipeline_options if fs else None
    if options is None:
        return ()
    found = options.get_all_options(drop_default=True, retain_unknown_options=True)
    return tuple(f"--{k}" if v is True else f"--{k}={v}" for k, v in sorted(found.items())
                 if k.startswith(_FILESYSTEM_OPTIONS) and (isinstance(v, str) or v is True))


_FILESYSTEM_OPTIONS = ("s3_", "hdfs_", "azure_", "blob_")  # Beam's S3, HDFS, Azure options


def ensure_options(args):
    """In a worker: give Beam's filesystems ``args`` (:func:`filesystem_args` of the driver)
    when there are any; without, each client reads its environment."""
    if args:
        use_options(list(args))


class NoConditionalWrites(OSError):
    """The store of a path offers no conditional create that corpustok uses (local paths, or
    any scheme but ``s3://``)."""


def create_new(path, data: bytes):
    """Object ``path`` created holding ``data`` only if none has that name (S3's
    ``If-None-Match: *``): its version tag, or None when one exists."""
    return _conditional(path).create_new(path, data)


def read_versioned(path):
    """``(data, version tag)`` of object ``path``, or None when there is none."""
    return _conditional(path).read_versioned(path)


def replace_if(path, data: bytes, version):
    """Object ``path`` overwritten with ``data`` only if still at ``version``: the new version
    tag, or None."""
    return _conditional(path).replace_if(path, data, version)


def remove_if(path, version):
    """Object ``path`` deleted only if still at ``version``; whether it was."""
    return _conditional(path).remove_if(path, version)


def _conditional(path):
    if not path.startswith("s3://"):
        raise NoConditionalWrites(f"{shown(path)}: no conditional writes (s3:// only)")
    from corpustok.pipeline.files import beam  # here: Beam for remote paths only
    return beam


_SHOWN_ESCAPE = re.compile(r"\\(\\|x[89a-f][0-9a-f])")


def shown(path: str) -> str:
    """``path`` as text that UTF-8 can hold (manifests, Arrow columns, messages), one to one:
    a local name holding bytes that are not UTF-8 (read by Python as lone surrogates) shows
    them as ``\\xNN``, and then, as in any local name holding a backslash, a backslash shows
    as two, so that no two files show alike (``a\\xff``, a name of four characters, shows as
    ``a\\\\xff``). :func:`unshown` maps it back. Names without either (nearly all) and remote
    URLs show as they are."""
    if is_remote(path) or (is_utf8(path) and "\\" not in path):
        return path
    return "".join("\\\\" if c == "\\" else
                   f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else c
                   for c in path)


def unshown(text: str) -> str:
    """The path :func:`shown` made ``text`` from."""
    if is_remote(text) or "\\" not in text:
        return text
    return _SHOWN_ESCAPE.sub(lambda m: "\\" if m.group(1) == "\\" else
                             chr(0xDC00 + int(m.group(1)[1:], 16)), text)


def canonical(path: str) -> str:
    """The one name a job records for an input (the shards' ``source``, manifests, the job
    record): a local file's absolute, normalized path (``data/../x`` and ``./x`` are one
    name; symbolic links are kept as named), a remote URL as given."""
    return path if is_remote(path) else os.path.abspath(path)


def join(folder: str, *names: str) -> str:
    return filesystem(folder).join(folder, *names)


def split(path: str):
    """``(folder, name)`` of ``path``."""
    return filesystem(path).split(path)


def match(pattern: str) -> list:
    """Files matching ``pattern``, sorted: the file itself when one has exactly that name
    (names may hold ``[``), else the glob's matches (``**`` crosses folder levels)."""
    return filesystem(pattern).match(pattern)


def file_key(path):
    """What makes two paths one file: device and inode for a local file, a remote path
    itself."""
    return filesystem(path).file_key(path)


def identity(path: str) -> str:
    """Absolute path, size and modification time: changes whenever the file's content may
    have (local: the absolute path alone if the file cannot be seen)."""
    return filesystem(path).identity(path)


def open_read(path: str):
    """A buffered binary file object of ``path`` as stored (no decompression)."""
    return filesystem(path).open_read(path)


def open_lines(path: str, on_bytes=None):
    """A context manager: a binary, line-iterable stream of ``path``, decompressed by suffix
    (``.gz``, ``.xz``, ``.zst``); ``on_bytes(n)`` is called with the stored bytes of each read
    (a job's progress), if given."""
    return filesystem(path).open_lines(path, on_bytes)


def parquet_file(path: str):
    """A context manager: a ``pyarrow.parquet.ParquetFile`` of ``path`` whose column chunks
    are read through a 1 MB buffer rather than whole (pyarrow's default), so a huge row group
    streams."""
    return filesystem(path).parquet_file(path)


def read_bytes(path: str) -> bytes:
    with open_read(path) as f:
        return f.read()


def size(path: str) -> int:
    """Size in bytes; OSError when ``path`` does not exist."""
    return filesystem(path).size(path)


def exists(path: str) -> bool:
    return filesystem(path).exists(path)


def makedirs(folder: str):
    """Create ``folder`` (and parents) if missing; nothing to do on object stores."""
    filesystem(folder).makedirs(folder)


def listdir(folder: str) -> list:
    """Names (not paths) of the files directly in ``folder``; empty if it does not exist.
    Listing errors are raised, never taken for an empty folder."""
    return filesystem(folder).listdir(folder)


def listdir_all(folder: str) -> list:
    """Names of everything directly in ``folder``, folders included (object stores: the
    objects at that level); empty if it does not exist."""
    return filesystem(folder).listdir_all(folder)


def is_dir(path: str) -> bool:
    """Whether ``path`` is a folder (object stores: a prefix holding objects)."""
    return filesystem(path).is_dir(path)


def remove(paths):
    """Delete ``paths`` (files that exist)."""
    paths = list(paths)
    _LOCAL.remove([p for p in paths if not is_remote(p)])
    remote = [p for p in paths if is_remote(p)]
    if remote:
        filesystem(remote[0]).remove(remote)


def temp_prefix(run_id: str) -> str:
    """Start of the names of the temporaries a run writes: :data:`TMP_PREFIX` and its id."""
    return f"{TMP_PREFIX}{run_id}-"


class _Hashing:
    """A binary file object that hashes (sha256) and counts what is written through it."""

    def __init__(self, f):
        self._f = f
        self.sha256 = hashlib.sha256()
        self.size = 0
        self.closed = False

    def write(self, data):
        self.sha256.update(data)
        self.size += len(memoryview(data).cast("B"))
        return self._f.write(data)

    def flush(self):
        self._f.flush()

    def tell(self):
        return self.size

    def writable(self):
        return True

    def close(self):
        self.closed = True  # the caller closes the file itself


class Staged:
    """A file written in full but not yet at its place (``path``), with its ``size`` and
    ``sha256`` (of the bytes written): :meth:`publish` puts it there in one step (a rename
    of a temporary that was synced to disk first, then the folder synced, so the name is
    durable before any record written after it; on object stores, the upload), and
    :meth:`discard` drops it. A staged file that is neither stays as a temporary named with
    its run id, which the next run of the folder deletes."""

    def __init__(self, fs, path, size, sha256, tmp=None, data=None):
        self._fs = fs
        self.path = path
        self.size = size
        self.sha256 = sha256
        self._tmp = tmp
        self._data = data

    def publish(self):
        if self._tmp is None:
            with self._fs.create(self.path) as f:
                f.write(self._data)
            self._data = None
            return
        self._fs.replace(self._tmp, self.path)
        self._fs.sync_folder(self._fs.split(self.path)[0])
        self._tmp = None

    def discard(self):
        if self._tmp is not None:
            try:
                self._fs.remove([self._tmp])
            except OSError:
                pass  # an error being reported matters more than the temporary
            self._tmp = None
        self._data = None


def stage(path: str, write, run_id=None, tmp_dir=None) -> Staged:
    """Call ``write(f)`` with a binary file object and return the :class:`Staged` file,
    not yet visible at ``path``. Where a file appears only once its upload completes (object
    stores) the bytes are gathered in memory (a shard: tens of MB) and uploaded by
    ``publish``; elsewhere they go to a temporary name (carrying ``run_id``, so a later run
    can tell a killed run's temporaries from anyone else's files) in ``tmp_dir`` (default:
    the folder of ``path``; on the same filesystem, so that the rename is atomic), synced to
    disk. Whatever fails, no temporary stays."""
    fs = filesystem(path)
    if fs.publishes_whole(path):
        buf = io.BytesIO()  # a failed write must not close (and so publish) a partial upload
        hashing = _Hashing(buf)
        write(hashing)
        return Staged(fs, path, hashing.size, hashing.sha256.hexdigest(),
                      data=buf.getbuffer())
    folder, base = fs.split(path)
    tag = run_id or f"pid{os.getpid()}"
    tmp = fs.join(tmp_dir or folder, f"{temp_prefix(tag)}{base}.{uuid.uuid4().hex[:8]}")
    try:
        with fs.create(tmp) as f:
            hashing = _Hashing(f)
            write(hashing)
            f.flush()
            fs.sync(f)
    except BaseException:
        try:
            fs.remove([tmp])
        except OSError:
            pass  # the original error is the one to report
        raise
    return Staged(fs, path, hashing.size, hashing.sha256.hexdigest(), tmp=tmp)


def published(staged: Staged) -> Staged:
    """``staged`` published (discarded if that fails), for a caller with nothing to do in
    between."""
    try:
        staged.publish()
    except BaseException:
        staged.discard()
        raise
    return staged


def write_atomic(path: str, write, run_id=None, tmp_dir=None) -> Staged:
    """Call ``write(f)`` with a binary file object so that ``path`` is either as before or
    whole (:func:`stage`, then published); returns the published :class:`Staged` (its size
    and sha256)."""
    return published(stage(path, write, run_id, tmp_dir))


def sha256_of(path: str, block=1 << 20) -> str:
    """The sha256 of a file's bytes, read in blocks."""
    h = hashlib.sha256()
    with open_read(path) as f:
        for chunk in iter(lambda: f.read(block), b""):
            h.update(chunk)
    return h.hexdigest()


@contextmanager
def local_copy(path: str):
    """``path`` itself when local, else a temporary local copy (removed afterwards): for
    readers that need a real file, such as the tokenizer loaders."""
    with filesystem(path).local_copy(path) as local:
        yield local
