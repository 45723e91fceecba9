"""Substrate codec: text <-> base symbols for byte-level BPE.

Symbol ids: ``0..255`` are bytes of the first alphabet (UTF-8 bytes for ``utf8`` and for the
1-2 byte characters of ``ube``; UTF-16LE bytes for ``utf16``), ``256..511`` are UTF-16LE bytes
of UBE's second alphabet (characters of UTF-8 length 3-4). Every kernel here is one call per
batch, linear in the bytes of the batch.
"""
import numpy as np
from numba import njit

from corpustok.kernels.unicode import (HIGH_BITS, load_word, put_utf8, short_char_length,
                                       utf8_length, utf8_step, utf16le_step)

UTF8 = 0
UTF16 = 1
UBE = 2
SECOND = 256  # first id of UBE's UTF-16LE alphabet


@njit(nogil=True, cache=True, _nrt=False)
def symbol_count(cp, substrate):
    """Base symbols of one code point: 1/2/3/4 (utf8), 2/2/2/4 (utf16), 1/2/2/4 (ube) for
    UTF-8 lengths 1/2/3/4. The one copy of this rule (the CPU and CUDA counts use it)."""
    n8 = utf8_length(cp)
    if substrate == UTF8 or (substrate == UBE and n8 <= 2):
        return n8
    return 2 if cp < 0x10000 else 4


@njit(nogil=True, cache=True, _nrt=False)
def most_symbols(nbytes, substrate):
    """The most base symbols ``nbytes`` of well-formed UTF-8 can have, by :func:`symbol_count`:
    one a byte (utf8, ube), two under utf16 (an ASCII character). Ill-formed bytes can have
    more (one bad byte is U+FFFD: three symbols under utf8), so only checked text may use it."""
    return 2 * nbytes if substrate == UTF16 else nbytes


@njit(nogil=True, cache=True, _nrt=False)
def put_symbols(cp, substrate, out, j):
    """Write the base symbols of code point ``cp`` at ``out[j]``; returns the next position."""
    if substrate == UTF8 or (substrate == UBE and cp < 0x800):
        return put_utf8(cp, out, j)
    base = SECOND if substrate == UBE else 0
    if cp < 0x10000:
        out[j] = base + (cp & 0xFF)
        out[j + 1] = base + (cp >> 8)
        return j + 2
    v = cp - 0x10000
    hi = 0xD800 + (v >> 10)
    lo = 0xDC00 + (v & 0x3FF)
    out[j] = base + (hi & 0xFF)
    out[j + 1] = base + (hi >> 8)
    out[j + 2] = base + (lo & 0xFF)
    out[j + 3] = base + (lo >> 8)
    return j + 4


@njit(nogil=True, cache=True)
def count_symbols(data, offsets, substrate, counts, replaced):
    """First pass: symbols per document into ``counts``, U+FFFD replacements into ``replaced``.

    Invalid UTF-8 is read as CPython's ``decode("utf-8", "replace")`` reads it. O(bytes): runs
    of ASCII and well-formed 2- and 3-byte characters are counted inline; anything else goes
    through :func:`utf8_step`.
    """
    # the inline paths' weights, by the one rule (int64 code points: literals would compile
    # symbol_count once for each)
    weight1 = symbol_count(np.int64(0x41), substrate)
    weight2 = symbol_count(np.int64(0x80), substrate)
    weight3 = symbol_count(np.int64(0x800), substrate)
    for d in range(len(offsets) - 1):
        i = offsets[d]
        end = offsets[d + 1]
        c = 0
        r = 0
        while i < end:
            b = data[i]
            if b < 0x80:
                k = i + 1
                while k + 8 <= end and load_word(data, k) & HIGH_BITS == 0:  # 8 at a time
                    k += 8
                while k < end and data[k] < 0x80:
                    k += 1
                c += (k - i) * weight1
                i = k
                continue
            m = short_char_length(data, i, end)
            if m:
                c += weight2 if m == 2 else weight3
                i += m
                continue
            cp, n, bad = utf8_step(data, i, end)
            c += symbol_count(cp, substrate)
            r += bad
            i += n
        counts[d] = c
        replaced[d] = r


@njit(nogil=True, cache=True)
def write_symbols(data, offsets, substrate, out_offsets, out, replaced):
    """Second pass: write each document's symbols at ``out[out_offsets[d]:]``. O(bytes).

    A document the first pass found well-formed (``replaced[d] == 0``) takes an unchecked
    path (for ``ube`` a copy of 1-2 byte characters, with only 3-4 byte characters decoded);
    others go through :func:`utf8_step`. :func:`encode_symbols` skips this pass altogether
    for a well-formed ``utf8`` batch, whose symbols are its bytes.
    """
    for d in range(len(offsets) - 1):
        i = offsets[d]
        end = offsets[d + 1]
        j = out_offsets[d]
        if replaced[d] == 0 and substrate != UTF8:
            base = SECOND if substrate == UBE else 0
            while i < end:
                b = np.int64(data[i])
                if b < 0xE0 and substrate == UBE:  # 1-2 byte characters keep their bytes
                    out[j] = b
                    j += 1
                    i += 1
                    continue
                if b < 0x80:
                    out[j] = b
                    out[j + 1] = 0
                    j += 2
                    i += 1
                    continue
                if b < 0xE0:
                    cp = ((b & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F)
                    i += 2
                elif b < 0xF0:
                    cp = ((b & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) \
                        | (np.int64(data[i + 2]) & 0x3F)
                    i += 3
                else:
                    cp, n, bad = utf8_step(data, i, end)
                    j = put_symbols(cp, substrate, out, j)
                    i += n
                    continue
                out[j] = base + (cp & 0xFF)
                out[j + 1] = base + (cp >> 8)
                j += 2
            continue
        while i < end:
            if data[i] < 0x80:  # runs of ASCII: a widening copy (interleaved with 0 for utf16)
                if substrate == UTF16:
                    while i < end and data[i] < 0x80:
                        out[j] = data[i]
                        out[j + 1] = 0
                        j += 2
                        i += 1
                else:
                    while i < end and data[i] < 0x80:
                        out[j] = data[i]
                        j += 1
                        i += 1
                continue
            cp, n, bad = utf8_step(data, i, end)
            j = put_symbols(cp, substrate, out, j)
            i += n


def encode_symbols(data, offsets, substrate):
    """Symbols of a batch: ``(symbols uint16, out_offsets int64, replaced int64)``.

    Two linear passes (count, prefix sum, write), the same shape as the CUDA path.
    """
    n = len(offsets) - 1
    counts = np.empty(n, np.int64)
    replaced = np.empty(n, np.int64)
    count_symbols(data, offsets, substrate, counts, replaced)
    out_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=out_offsets[1:])
    if substrate == UTF8 and not replaced.any():
        return data[offsets[0]:offsets[-1]].astype(np.uint16), out_offsets, replaced
    out = np.empty(out_offsets[-1], np.uint16)
    write_symbols(data, offsets, substrate, out_offsets, out, replaced)
    return out, out_offsets, replaced


@njit(nogil=True, cache=True)
def decode_symbols(symbols, offsets, substrate, out, out_offsets, replaced):
    """Symbols back to UTF-8 text, per document; ``out`` needs ``3 * len(symbols)`` bytes.

    ``ube`` keeps two buffers in effect: a maximal run of first-alphabet symbols is decoded as
    UTF-8 and a run of second-alphabet symbols as UTF-16LE, each with CPython's
    ``errors="replace"`` rules, so a run is flushed exactly when the alphabet switches.
    Ill-formed runs give U+FFFD, counted per document in ``replaced``. O(symbols).
    """
    scratch = np.empty(len(symbols), np.uint8)
    for k in range(len(symbols)):
        scratch[k] = symbols[k] & 0xFF
    j = np.int64(0)  # not a literal: put_utf8 would compile for it too
    out_offsets[0] = 0
    for d in range(len(offsets) - 1):
        i = offsets[d]
        end = offsets[d + 1]
        r = 0
        while i < end:
            second = symbols[i] >= SECOND
            run_end = i + 1
            if substrate == UBE:
                while run_end < end and (symbols[run_end] >= SECOND) == second:
                    run_end += 1
            else:
                run_end = end
            if substrate == UTF16 or second:
                while i < run_end:
                    cp, n, bad = utf16le_step(scratch, i, run_end)
                    j = put_utf8(cp, out, j)
                    r += bad
                    i += n
            else:
                while i < run_end:
                    b = scratch[i]
                    if b < 0x80:
                        out[j] = b
                        j += 1
                        i += 1
                        continue
                    cp, n, bad = utf8_step(scratch, i, run_end)
                    j = put_utf8(cp, out, j)
                    r += bad
                    i += n
        out_offsets[d + 1] = j
        replaced[d] = r
    return j
