"""A file held with an exclusive ``flock`` whose content is a record of its holder: the
output folder's run lock (``output.layout``) and an export's prefix lock (``output.export``).

The content is data, not decoration: the next holder reads what a killed holder wrote (its
run id, its export tag) before writing its own, and a holder may leave a dead one's record in
place for the next (decision 0038 says why a lock library does not fit). The kernel drops a
flock when its process dies, so a file that can be taken belongs to no live process.
"""
import fcntl
import os

RECORD_MAX = 1 << 16  # bytes of a holder's record read


class Busy(OSError):
    """The file is held by a live process; ``record`` is what that holder wrote (bytes)."""

    def __init__(self, path, record: bytes):
        super().__init__(f"{path} is held by another process")
        self.record = record


class HeldFile:
    """An exclusive, non-blocking ``flock`` on ``path`` (created if absent)."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def take(self) -> bytes:
        """Take the file; returns the record the previous holder left (b"" for a new file).
        Raises :class:`Busy` while a live process holds it."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                record = os.pread(fd, RECORD_MAX, 0)
                os.close(fd)
                raise Busy(self.path, record) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                return os.pread(fd, RECORD_MAX, 0)
            os.close(fd)  # unlinked by a holder that ended as we opened it: take the new one

    def write(self, record: bytes):
        """Replace the record with ``record``, on disk before it returns (the first write of
        a run: a full or read-only disk shows here)."""
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, record, 0)
        os.fsync(self.fd)

    def release(self, keep=False):
        """Let go: the file is removed, or with ``keep`` left with its record (a dead
        holder's, for the next one)."""
        fd, self.fd = self.fd, None
        if fd is None:
            return
        try:
            if not keep:
                os.unlink(self.path)
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)
