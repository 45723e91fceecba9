"""Opening possibly compressed text files, shared by the pipeline's readers and the report.

A compressed file is a sequence of members, each checked at its own end: a gzip member (its
CRC-32 and length), an xz stream (its integrity check), a zstd frame (its content checksum,
when the frame has one; a frame without one is only known to decode). A file may hold
several (``pigz``/``bgzip`` gzip, ``pzstd`` frames, concatenated files). The bytes
decompressed since the last member that passed its check are not yet known to be sound: when
the file fails later (corrupt or truncated), the reader tells how far it was verified
(:func:`verified`), so that the job keeps only the documents before that point. Decompression
streams member by member in bounded memory (no member is held whole: one may be the whole
file).
"""
import io
import lzma
import zlib
from dataclasses import dataclass

import zstandard

COMPRESSED_EXTS = (".gz", ".xz", ".zst", ".zstd")
# What reading a damaged file raises: ``Damaged`` (a compressed file that fails its checks or
# is truncated), unreadable storage (OSError); the rest for streams opened elsewhere.
DECODE_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)
READ_SIZE = 1 << 17  # stored bytes read at a time
# Stored bytes given to the zstd decompressor at a time: its output is not bounded by a length
# (as zlib's and lzma's are), only by its input, at most 32,768 times it (a 1 GiB run of one
# byte compresses to 32 KiB): 4 KiB make at most 128 MiB, of text some 16 KiB. Larger pieces
# read no faster.
ZSTD_PIECE = 1 << 12


class Damaged(OSError):
    """A compressed file that fails its format's checks, or ends inside a member. An OSError,
    as gzip's ``BadGzipFile`` is, so that whoever handles an unreadable file handles it."""


@dataclass(frozen=True)
class Verified:
    """How much of a decompressed stream is known sound: the bytes up to the end of the last
    member (``unit``, e.g. ``"gzip member"``) that passed its check, ``lines`` of them
    (line ends, ``b"\\n"``, in those bytes)."""

    unit: str
    lines: int


def strip_compression(path: str) -> str:
    """``path`` without a trailing compression suffix (lower-cased), to see the format."""
    base = path.lower()
    for ext in COMPRESSED_EXTS:
        if base.endswith(ext):
            return base[: -len(ext)]
    return base


def open_binary(path: str, raw=None, on_bytes=None):
    """A binary line-iterable stream of ``path``, decompressing ``.gz``, ``.xz`` and
    ``.zst``/``.zstd`` by suffix (member by member: :func:`verified`); ``raw``, if given, is
    the stored bytes already opened and buffered (a remote file), which the caller closes.
    ``on_bytes``, if given, is called with the number of stored bytes of every read (a
    job's progress line: :class:`_Counted`)."""
    fmt = _format(path)
    stored = raw
    if on_bytes is not None:
        stored = io.BufferedReader(_Counted(open(path, "rb") if raw is None else raw,
                                            raw is None, on_bytes), 1 << 18)
    if fmt is None:
        return open(path, "rb") if stored is None else stored
    if stored is None:
        stored = open(path, "rb")
    return io.BufferedReader(_Members(stored, fmt, stored is not raw), 1 << 20)


def verified(stream):
    """The :class:`Verified` extent of ``stream`` (what :func:`open_binary` returned), or None
    for a stream that is not decompressed: every byte read from it is as stored."""
    members = getattr(stream, "raw", None)
    if not isinstance(members, _Members):
        return None
    return Verified(f"{members.format.name} {members.format.member}", members.verified_lines)


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


class _Gzip:
    """One gzip member's decompressor (zlib checks its CRC-32 and length at its end)."""

    def __init__(self, _context):
        self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)

    @property
    def eof(self):
        return self._d.eof

    def decompress(self, data, limit):
        """``(output of at most limit bytes, input not used)``."""
        out = self._d.decompress(data, limit)
        return out, self._d.unused_data if self._d.eof else self._d.unconsumed_tail


class _Xz:
    """One xz stream's decompressor (or a legacy ``.lzma`` file, as ``lzma.open`` reads)."""

    def __init__(self, _context):
        self._d = lzma.LZMADecompressor()

    @property
    def eof(self):
        return self._d.eof

    def decompress(self, data, limit):
        out = self._d.decompress(data, limit)  # keeps what it does not use yet
        return out, self._d.unused_data if self._d.eof else b""


class _Zstd:
    """One zstd frame's decompressor (skippable frames decode to nothing)."""

    def __init__(self, context):
        self._d = context.decompressobj(read_across_frames=False)

    @property
    def eof(self):
        return self._d.eof

    def decompress(self, data, limit):
        piece, later = data[:ZSTD_PIECE], data[ZSTD_PIECE:]
        out = self._d.decompress(piece) if piece else b""
        return out, self._d.unused_data + later if self._d.eof else later


@dataclass(frozen=True)
class _Format:
    """A compressed format: its name, what it calls a member, the decompressor of one, and
    whether zero bytes may follow a member (gzip files padded with zeros, which ``gzip``
    reads; xz stream padding)."""

    name: str
    member: str
    decoder: type
    padding: bool


_FORMATS = {".gz": _Format("gzip", "member", _Gzip, True),
            ".xz": _Format("xz", "stream", _Xz, True),
            ".zst": _Format("zstd", "frame", _Zstd, False),
            ".zstd": _Format("zstd", "frame", _Zstd, False)}
_CODEC_ERRORS = (zlib.error, lzma.LZMAError, zstandard.ZstdError)


def _format(path):
    lower = path.lower()
    return next((f for ext, f in _FORMATS.items() if lower.endswith(ext)), None)


class _Members(io.RawIOBase):
    """The decompressed bytes of ``stored`` (buffered stored bytes: members of ``fmt`` one
    after the other), decompressed a member at a time, each checked at its end; closes
    ``stored`` if ``owned``. ``verified_lines``: the line ends in the bytes up to the end of
    the last member that passed its check. Raises :class:`Damaged` on a member that fails,
    or that the file ends inside (zstandard's own reader ends quietly there: its documents
    would vanish)."""

    def __init__(self, stored, fmt: _Format, owned):
        self.format = fmt
        self.verified_lines = 0
        self._stored = stored
        self._owned = owned
        self._context = zstandard.ZstdDecompressor() if fmt.decoder is _Zstd else None
        self._member = None  # the decompressor of the member being read; None between two
        self._members = 0  # members begun
        self._lines = 0  # line ends of the member being read, so far
        self._input = b""  # stored bytes read, not yet used
        self._output = b""  # decompressed bytes not yet returned

    def readable(self):
        return True

    def readinto(self, buf):
        while not self._output:
            if self._member is None and not self._next_member():
                return 0
            self._decompress(len(buf))
        n = min(len(buf), len(self._output))
        buf[:n] = self._output[:n]
        self._output = self._output[n:]
        return n

    def _read(self):
        self._input = self._stored.read(READ_SIZE)
        return bool(self._input)

    def _next_member(self):
        """Start the next member; False at the end of the file (after its padding)."""
        while True:
            if not self._input and not self._read():
                return False
            if self.format.padding and self._members:
                self._input = self._input.lstrip(b"\0")
            if self._input:
                break
        self._member = self.format.decoder(self._context)
        self._members += 1
        return True

    def _decompress(self, limit):
        """Decompress some of the member into ``_output`` (perhaps nothing: its header, or
        more input needed); the member checked and closed at its end."""
        try:
            out, self._input = self._member.decompress(self._input, limit)
        except _CODEC_ERRORS as e:
            raise Damaged(f"{self._where()}: {e}") from e
        if out:
            self._lines += out.count(b"\n")
            self._output = memoryview(out)
        if self._member.eof:
            self.verified_lines += self._lines
            self._lines = 0
            self._member = None
        elif not out and not self._input and not self._read():
            raise Damaged(f"Truncated file: it ends inside {self._where()}")

    def _where(self):
        return f"{self.format.name} {self.format.member} {self._members}"

    def close(self):
        if not self.closed:
            self._member = None
            self._input = self._output = b""
            if self._owned:
                self._stored.close()
        super().close()
