"""Opening possibly compressed text files, shared by the pipeline's readers and the report."""
import gzip
import io
import lzma
import zlib

COMPRESSED_EXTS = (".gz", ".xz", ".zst", ".zstd")
# What reading a damaged file raises: truncation (EOFError from gzip and lzma, OSError from
# Arrow's zstd), corruption (zlib.error, LZMAError, OSError) and unreadable storage (OSError).
DECODE_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)


def strip_compression(path: str) -> str:
    """``path`` without a trailing compression suffix (lower-cased), to see the format."""
    base = path.lower()
    for ext in COMPRESSED_EXTS:
        if base.endswith(ext):
            return base[: -len(ext)]
    return base


def open_binary(path: str, raw=None):
    """A binary line-iterable stream of ``path``, decompressing ``.gz``, ``.xz`` and
    ``.zst``/``.zstd`` by suffix; ``raw``, if given, is the stored bytes already opened and
    buffered (a remote file), which the caller closes. While a tokenize job's progress line
    listens, the stored bytes are read through :class:`_Counted`."""
    from corpustok.pipeline import progress  # here: progress imports the file layer
    if not progress.active():
        return _decompressed(path, raw)
    owned = raw is None
    counted = io.BufferedReader(_Counted(open(path, "rb") if owned else raw, owned,
                                         progress.report), 1 << 18)
    stream = _decompressed(path, counted)
    if owned and isinstance(stream, (gzip.GzipFile, lzma.LZMAFile)):
        close = stream.close  # these leave a file object they were given open

        def close_both():
            close()
            counted.close()
        stream.close = close_both
    return stream


class _Counted(io.RawIOBase):
    """Stored bytes whose every read is passed to ``report``; closes ``stored`` if
    ``owned``."""

    def __init__(self, stored, owned, report):
        self._stored = stored
        self._owned = owned
        self._report = report

    def readable(self):
        return True

    def readinto(self, buf):
        n = self._stored.readinto(buf)
        if n:
            self._report(n)
        return n

    def close(self):
        if self._owned and not self.closed:
            self._stored.close()
        super().close()


def _decompressed(path: str, raw=None):
    lower = path.lower()
    source = path if raw is None else raw
    if lower.endswith(".gz"):
        return gzip.open(source, "rb")
    if lower.endswith(".xz"):
        return lzma.open(source, "rb")
    if lower.endswith((".zst", ".zstd")):
        # Arrow's zstd stream, not zstandard's reader: that one ends quietly at a truncated
        # frame (documents vanish), Arrow's raises OSError, as gzip and lzma do. Buffered,
        # so lines can be iterated.
        import pyarrow as pa
        if raw is None:  # pyarrow opens only UTF-8 names itself
            try:
                stored = pa.OSFile(path.encode("utf-8").decode("utf-8"))
            except UnicodeEncodeError:
                stored = pa.PythonFile(open(path, "rb"), mode="r")
        else:
            stored = pa.PythonFile(raw, mode="r")
        return io.BufferedReader(pa.CompressedInputStream(stored, "zstd"), 1 << 20)
    return open(path, "rb") if raw is None else raw

