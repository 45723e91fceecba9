"""UTF-8 / UTF-16LE steps shared by every kernel.

Each decoder step consumes one code point (or one maximal ill-formed subpart) and replaces
ill-formed input with U+FFFD exactly as CPython's ``bytes.decode(..., "replace")`` does, so a
kernel that walks text with these steps sees the same characters Python would. All functions
are O(1) per call.

Per-character helpers that take arrays are compiled with ``_nrt=False``: otherwise every call
from a kernel's inner loop increments and decrements the array's reference count atomically
(docs/decisions/0017-numba-habits.md). Do the same for any small jitted helper called per character; they
must not allocate.
"""
import numpy as np
from numba import njit

REPLACEMENT = 0xFFFD


@njit(nogil=True, cache=True, _nrt=False)
def utf8_step(data, i, end):
    """Decode the code point starting at ``data[i]`` (``i < end``).

    Returns ``(cp, n, bad)``: the code point (U+FFFD when ill-formed), the bytes consumed and
    1 when a replacement was made. Follows CPython: the longest prefix of a well-formed
    sequence (a "maximal subpart") becomes one U+FFFD; any other bad byte is one U+FFFD each.
    """
    b0 = np.int64(data[i])
    if b0 < 0x80:
        return b0, 1, 0
    if b0 < 0xC2:
        return REPLACEMENT, 1, 1
    if b0 < 0xE0:
        if i + 1 < end:
            b1 = np.int64(data[i + 1])
            if 0x80 <= b1 <= 0xBF:
                return ((b0 & 0x1F) << 6) | (b1 & 0x3F), 2, 0
        return REPLACEMENT, 1, 1
    if b0 >= 0xF5:
        return REPLACEMENT, 1, 1
    # 3- and 4-byte leads: the second byte's range excludes overlongs (E0, F0), surrogates
    # (ED) and code points past U+10FFFF (F4); later bytes are plain continuations.
    n = 3
    cp = b0 & 0x0F
    lo = 0x80
    hi = 0xBF
    if b0 == 0xE0:
        lo = 0xA0
    elif b0 == 0xED:
        hi = 0x9F
    elif b0 >= 0xF0:
        n = 4
        cp = b0 & 0x07
        if b0 == 0xF0:
            lo = 0x90
        elif b0 == 0xF4:
            hi = 0x8F
    for k in range(1, n):
        if i + k >= end:
            return REPLACEMENT, k, 1
        b = np.int64(data[i + k])
        if b < lo or b > hi:
            return REPLACEMENT, k, 1
        cp = (cp << 6) | (b & 0x3F)
        lo = 0x80
        hi = 0xBF
    return cp, n, 0


@njit(nogil=True, cache=True, _nrt=False)
def utf16le_step(data, i, end):
    """Decode the UTF-16LE code point starting at byte ``data[i]`` (``i < end``).

    Returns ``(cp, n, bad)`` like :func:`utf8_step`, matching CPython's ``utf-16-le``
    decoder with ``errors="replace"``: a trailing odd byte, a high surrogate cut off by the
    end (with or without one more byte), a high surrogate not followed by a low one (only the
    high unit is replaced) and a lone low surrogate each give one U+FFFD.
    """
    if i + 1 >= end:
        return REPLACEMENT, 1, 1
    u = np.int64(data[i]) | (np.int64(data[i + 1]) << 8)
    if u < 0xD800 or u > 0xDFFF:
        return u, 2, 0
    if u >= 0xDC00:
        return REPLACEMENT, 2, 1
    if i + 3 >= end:
        return REPLACEMENT, end - i, 1
    u2 = np.int64(data[i + 2]) | (np.int64(data[i + 3]) << 8)
    if 0xDC00 <= u2 <= 0xDFFF:
        return 0x10000 + ((u - 0xD800) << 10) + (u2 - 0xDC00), 4, 0
    return REPLACEMENT, 2, 1


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def short_lead_length(b0):
    """2 or 3 when ``b0`` leads a 2- or 3-byte character that is well-formed whenever its
    continuations are plain (``80``-``BF``): C2-DF, or E1-EC, EE, EF; else 0. The one copy of
    the rule the inline decoders share (E0 and ED narrow their second byte; 4-byte leads and
    stray bytes go through :func:`utf8_step`)."""
    if 0xC2 <= b0 <= 0xDF:
        return 2
    if 0xE1 <= b0 <= 0xEF and b0 != 0xED:
        return 3
    return 0


@njit(nogil=True, cache=True, _nrt=False)
def short_char_length(data, i, end):
    """2 or 3 when ``data[i:end]`` starts with a well-formed 2- or 3-byte character whose
    symbols are cheap to take inline (:func:`short_lead_length` with plain continuations),
    else 0: the common cases of :func:`utf8_step`, without the call."""
    m = short_lead_length(np.int64(data[i]))
    if m == 0 or i + m > end or (data[i + 1] & 0xC0) != 0x80:
        return 0
    if m == 3 and (data[i + 2] & 0xC0) != 0x80:
        return 0
    return m


HIGH_BITS = np.int64(-9187201950435737472)  # 0x8080808080808080: a non-ASCII byte's bit


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def load_word(data, s):
    """The 8 bytes at ``data[s:s + 8]``, which must all exist, as a little-endian int64 (``&
    HIGH_BITS == 0``: all ASCII). Unsigned indices let LLVM fuse the eight loads into one."""
    u = np.uint64(s)
    return (np.int64(data[u]) | np.int64(data[u + np.uint64(1)]) << 8 |
            np.int64(data[u + np.uint64(2)]) << 16 | np.int64(data[u + np.uint64(3)]) << 24 |
            np.int64(data[u + np.uint64(4)]) << 32 | np.int64(data[u + np.uint64(5)]) << 40 |
            np.int64(data[u + np.uint64(6)]) << 48 | np.int64(data[u + np.uint64(7)]) << 56)


@njit(nogil=True, cache=True, _nrt=False)
def utf8_length(cp):
    """Bytes in the UTF-8 form of ``cp`` (1-4)."""
    if cp < 0x80:
        return 1
    if cp < 0x800:
        return 2
    if cp < 0x10000:
        return 3
    return 4


@njit(nogil=True, cache=True, _nrt=False)
def put_utf8(cp, out, j):
    """Write the UTF-8 form of ``cp`` at ``out[j]``; returns the next write position."""
    if cp < 0x80:
        out[j] = cp
        return j + 1
    if cp < 0x800:
        out[j] = 0xC0 | (cp >> 6)
        out[j + 1] = 0x80 | (cp & 0x3F)
        return j + 2
    if cp < 0x10000:
        out[j] = 0xE0 | (cp >> 12)
        out[j + 1] = 0x80 | ((cp >> 6) & 0x3F)
        out[j + 2] = 0x80 | (cp & 0x3F)
        return j + 3
    out[j] = 0xF0 | (cp >> 18)
    out[j + 1] = 0x80 | ((cp >> 12) & 0x3F)
    out[j + 2] = 0x80 | ((cp >> 6) & 0x3F)
    out[j + 3] = 0x80 | (cp & 0x3F)
    return j + 4


@njit(nogil=True, cache=True, _nrt=False)
def char_at(data, i):
    """``(code point, length)`` of the valid UTF-8 character at ``data[i]``."""
    b0 = np.int64(data[i])
    if b0 < 0x80:
        return b0, 1
    if b0 < 0xE0:
        return ((b0 & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F), 2
    if b0 < 0xF0:
        return (((b0 & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) |
                (np.int64(data[i + 2]) & 0x3F)), 3
    return (((b0 & 0x07) << 18) | ((np.int64(data[i + 1]) & 0x3F) << 12) |
            ((np.int64(data[i + 2]) & 0x3F) << 6) | (np.int64(data[i + 3]) & 0x3F)), 4


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def put_bytes(src, i, m, dst, j):
    """Copy ``src[i:i + m]`` to ``dst[j:]`` (which has the room); returns ``j + m``."""
    for t in range(m):
        dst[j + t] = src[i + t]
    return j + m
