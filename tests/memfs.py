"""``memfs://``: an in-memory Apache Beam FileSystem, a stand-in for gs:// or s3:// in tests.

It behaves like an object store where the pipeline could go wrong: no folders (``has_dirs``
is False, a "folder" is a name prefix); ``create`` publishes the object only when the writer
closes; ``open`` of a missing object raises the client library's own error type (not an
OSError, as google.api_core's NotFound); reads go through a bare stream without ``peek`` or
``readline``; like HDFS and S3 it refuses to work without pipeline options; open handles are
counted so tests can check that everything opened is closed. Registered with Beam by being
imported (Beam finds FileSystem subclasses by ``scheme()``); it lives in this process only,
so use it with the in-process runner.
"""
import io
import itertools

from apache_beam.io.filesystem import BeamIOError, FileMetadata, FileSystem

SCHEME = "memfs"
_clock = itertools.count(1)


class ClientError(Exception):
    """What a storage client raises: deliberately not an OSError."""


class _Download(io.RawIOBase):
    """A bare object stream: read, seek and tell, no buffering, no readline."""

    def __init__(self, data, handles):
        self._data = data
        self._pos = 0
        self._handles = handles
        handles.add(self)

    def readable(self):
        return True

    def seekable(self):
        return True

    def read(self, size=-1):
        end = len(self._data) if size is None or size < 0 else min(len(self._data),
                                                                    self._pos + size)
        chunk = self._data[self._pos:end]
        self._pos = end
        return chunk

    def readinto(self, buf):
        chunk = self.read(len(buf))
        buf[:len(chunk)] = chunk
        return len(chunk)

    def readline(self, size=-1):
        raise AssertionError("memfs objects have no readline; buffer the stream")

    def seek(self, offset, whence=io.SEEK_SET):
        self._pos = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos,
                     io.SEEK_END: len(self._data)}[whence] + offset
        return self._pos

    def tell(self):
        return self._pos

    def close(self):
        self._handles.discard(self)
        super().close()


class MemFileSystem(FileSystem):
    objects = {}  # path -> (bytes, modification time); shared by every instance Beam makes
    open_handles = set()

    def __init__(self, pipeline_options):
        if pipeline_options is None:
            raise ValueError("memfs: pipeline_options is not set")
        super().__init__(pipeline_options)

    @classmethod
    def scheme(cls):
        return SCHEME

    @classmethod
    def clear(cls):
        cls.objects.clear()
        cls.open_handles.clear()

    def join(self, basepath, *paths):
        return "/".join([basepath.rstrip("/")] + [p.strip("/") for p in paths])

    def split(self, path):
        head, _, tail = path.rpartition("/")
        return head, tail

    def mkdirs(self, path):
        pass

    def has_dirs(self):
        return False

    def _meta(self, path):
        data, mtime = self.objects[path]
        return FileMetadata(path, len(data), mtime)

    def _list(self, dir_or_prefix):
        for path in sorted(self.objects):
            if path.startswith(dir_or_prefix):
                yield self._meta(path)

    def create(self, path, mime_type=None, compression_type=None):
        objects = self.objects

        class _Upload(io.BytesIO):
            def close(self):
                if not self.closed:
                    objects[path] = (self.getvalue(), next(_clock))
                super().close()

        return _Upload()

    def open(self, path, mime_type=None, compression_type=None):
        if path not in self.objects:
            raise ClientError(f"404 No such object: {path}")
        return _Download(self.objects[path][0], self.open_handles)

    def copy(self, source_file_names, destination_file_names):
        for src, dst in zip(source_file_names, destination_file_names):
            self.objects[dst] = (self.objects[src][0], next(_clock))

    def rename(self, source_file_names, destination_file_names):
        for src, dst in zip(source_file_names, destination_file_names):
            self.objects[dst] = (self.objects.pop(src)[0], next(_clock))

    def exists(self, path):
        return path in self.objects

    def _get(self, path):
        if path not in self.objects:
            raise ClientError(f"404 No such object: {path}")
        return self.objects[path]

    def size(self, path):
        return len(self._get(path)[0])

    def last_updated(self, path):
        return self._get(path)[1]

    def checksum(self, path):
        return str(hash(self._get(path)[0]))

    def metadata(self, path):
        self._get(path)
        return self._meta(path)

    def delete(self, paths):
        missing = {p: FileNotFoundError(p) for p in paths if p not in self.objects}
        for p in paths:
            self.objects.pop(p, None)
        if missing:
            raise BeamIOError("Delete operation failed", missing)
