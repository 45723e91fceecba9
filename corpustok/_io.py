"""Opening possibly compressed text files, shared by the pipeline's readers and the report."""
import gzip
import io
import lzma

COMPRESSED_EXTS = (".gz", ".xz", ".zst", ".zstd")


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
    buffered (a remote file), which the caller closes."""
    lower = path.lower()
    source = path if raw is None else raw
    if lower.endswith(".gz"):
        return gzip.open(source, "rb")
    if lower.endswith(".xz"):
        return lzma.open(source, "rb")
    if lower.endswith((".zst", ".zstd")):
        import zstandard
        # The zstd reader has no readline: buffer it so lines can be iterated.
        return io.BufferedReader(zstandard.open(source, "rb"), 1 << 20)
    return open(path, "rb") if raw is None else raw


def open_text(path: str):
    """:func:`open_binary` decoded as UTF-8 text."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8")
