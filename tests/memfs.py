"""``memfs://``: an in-memory Apache Beam FileSystem, a stand-in for gs:// or s3:// in tests.

Like object stores it has no folders (``has_dirs`` is False, a "folder" is a name prefix) and
its ``create`` makes the object appear only when the writer closes. Registered with Beam by
being imported (Beam finds FileSystem subclasses by their ``scheme()``); it lives in this
process only, so use it with the in-process runner.
"""
import io
import itertools

from apache_beam.io.filesystem import BeamIOError, FileMetadata, FileSystem

SCHEME = "memfs"
_clock = itertools.count(1)


class MemFileSystem(FileSystem):
    objects = {}  # path -> (bytes, modification time); shared by every instance Beam makes

    @classmethod
    def scheme(cls):
        return SCHEME

    @classmethod
    def clear(cls):
        cls.objects.clear()

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
            raise FileNotFoundError(path)
        return io.BytesIO(self.objects[path][0])

    def copy(self, source_file_names, destination_file_names):
        for src, dst in zip(source_file_names, destination_file_names):
            self.objects[dst] = (self.objects[src][0], next(_clock))

    def rename(self, source_file_names, destination_file_names):
        for src, dst in zip(source_file_names, destination_file_names):
            self.objects[dst] = (self.objects.pop(src)[0], next(_clock))

    def exists(self, path):
        return path in self.objects

    def size(self, path):
        return len(self.objects[path][0])

    def last_updated(self, path):
        return self.objects[path][1]

    def checksum(self, path):
        return str(hash(self.objects[path][0]))

    def metadata(self, path):
        return self._meta(path)

    def delete(self, paths):
        missing = {p: FileNotFoundError(p) for p in paths if p not in self.objects}
        for p in paths:
            self.objects.pop(p, None)
        if missing:
            raise BeamIOError("Delete operation failed", missing)
