"""SentencePiece's normalizer (``normalizer.cc``) over a batch of UTF-8 documents.

The readable reference is :func:`corpustok.sentencepiece.reference.normalize`; this kernel
follows it step for step. At each position of a document, the replacement is the longest
user-defined piece that begins there (copied as is, found in a :mod:`.trie` of those pieces),
else the longest key of the precompiled charsmap (Darts' ``commonPrefixSearch`` over its
uint32 units, see :func:`charsmap_match`) replaced by its NUL-terminated string, else one
UTF-8 character copied (an invalid byte: one U+FFFD, counted in ``replaced``). Then the
whitespace rules: with ``remove_extra_whitespaces`` leading spaces go, a space run is one
space and trailing spaces go; ``add_dummy_prefix`` puts one space in front of a non-empty
text; ``escape_whitespaces`` writes every space as U+2581 (``▁``).

State of the model (:class:`NormalizerState`, a namedtuple of read-only arrays and int64
flags, so the kernel compiles once per signature). Time O(bytes x longest key); the output
buffer grows inside the kernel (a replacement may be longer than its key).
"""
from collections import namedtuple

import numpy as np
from numba import njit

from corpustok.kernels.memory.buffers import grown

LOW32 = 0xFFFFFFFF

NormalizerState = namedtuple("NormalizerState", [
    "charsmap",      # uint32 Darts units of the precompiled charsmap (one zero unit: none)
    "strings",       # uint8: the charsmap's NUL-terminated replacement strings
    "user_da",       # int64 double array of the user-defined pieces (see .trie)
    "user_val",      # int32: piece id ending at each slot, or -1
    "has_charsmap",  # int64 0/1
    "has_user",      # int64 0/1
    "dummy_prefix",  # int64 0/1: add_dummy_prefix
    "collapse",      # int64 0/1: remove_extra_whitespaces
    "escape",        # int64 0/1: escape_whitespaces (' ' -> U+2581)
    "ascii_plain",   # uint8 [128 * 129]: [b * 129 + c] = 1 when ASCII b followed by ASCII c
                     # (c = 128: the text's end) starts no charsmap key: b is copied as is
])

SRC_INPUT, SRC_STRINGS, SRC_FFFD = 0, 1, 2


@njit(nogil=True, cache=True, _nrt=False)
def _darts_offset(unit):
    return (unit >> 10) << ((unit & 512) >> 6)


@njit(nogil=True, cache=True, _nrt=False)
def charsmap_match(trie, data, at, end):
    """``(length, value)`` of the longest charsmap key that begins ``data[at:end]`` (0 when
    none): the Darts walk. A unit: ``has_leaf`` bit 8, label bits 0-7 and 31, ``offset =
    (unit >> 10) << ((unit & 512) >> 6)``; the child by byte ``c`` is at ``pos ^ offset ^ c``,
    a key's value is the low 31 bits of the unit at ``pos ^ offset``."""
    pos = _darts_offset(np.int64(trie[0]))
    n = len(trie)
    best = 0
    value = 0
    for i in range(at, end):
        c = np.int64(data[i])
        pos ^= c
        if pos >= n:
            break
        unit = np.int64(trie[pos])
        if (unit & 0x800000FF) != c:
            break
        pos ^= _darts_offset(unit)
        if (unit >> 8) & 1:
            best = i + 1 - at
            value = np.int64(trie[pos]) & 0x7FFFFFFF
    return best, value


@njit(nogil=True, cache=True, _nrt=False)
def valid_char_len(data, at, end):
    """``(valid, length)`` of the character at ``data[at]`` as sentencepiece's ``DecodeUTF8``
    reads it: an invalid one (bad lead or trail bytes, overlong, surrogate, past U+10FFFF,
    cut by ``end``) is one byte."""
    b0 = np.int64(data[at])
    if b0 < 0x80:
        return 1, 1
    n = end - at
    if n >= 2 and (b0 & 0xE0) == 0xC0:
        b1 = np.int64(data[at + 1])
        cp = ((b0 & 0x1F) << 6) | (b1 & 0x3F)
        if (b1 & 0xC0) == 0x80 and cp >= 0x80:
            return 1, 2
    elif n >= 3 and (b0 & 0xF0) == 0xE0:
        b1 = np.int64(data[at + 1])
        b2 = np.int64(data[at + 2])
        cp = ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)
        if (b1 & 0xC0) == 0x80 and (b2 & 0xC0) == 0x80 and cp >= 0x800 and \
                not (0xD800 <= cp < 0xE000):
            return 1, 3
    elif n >= 4 and (b0 & 0xF8) == 0xF0:
        b1 = np.int64(data[at + 1])
        b2 = np.int64(data[at + 2])
        b3 = np.int64(data[at + 3])
        cp = (((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F))
        if (b1 & 0xC0) == 0x80 and (b2 & 0xC0) == 0x80 and (b3 & 0xC0) == 0x80 and \
                0x10000 <= cp <= 0x10FFFF:
            return 1, 4
    return 0, 1


@njit(nogil=True, cache=True, _nrt=False)
def user_prefix(da, val, data, at, end):
    """Length of the longest user-defined piece that begins ``data[at:end]``, or 0."""
    best = 0
    s = 0
    nx = da[0]
    for i in range(at, end):
        t = (nx & LOW32) + np.int64(data[i]) + 1
        y = da[t]
        if (y >> 32) != s:
            break
        s = t
        nx = y
        if val[t] >= 0:
            best = i + 1 - at
    return best


@njit(nogil=True, cache=True)
def normalized_room(offsets):
    """The bytes :func:`normalize_batch` reserves for the documents of ``offsets``."""
    n_docs = len(offsets) - 1
    return max(16, 3 * (offsets[n_docs] - offsets[0]) // 2 + 3 * n_docs + 16)


@njit(nogil=True, cache=True)
def normalize_batch(data, offsets, state, room):
    """``(out uint8, out_offsets int64 [n+1], replaced int64 [n])``: the normalized bytes of
    each document ``data[offsets[d]:offsets[d + 1]]`` and how many invalid bytes became
    U+FFFD in it. ``room``: a uint8 array the bytes are written into when it holds
    :func:`normalized_room` (a pool's memory, decision 0046), else (an empty one) a new array
    is made; a longer result grows into a new array either way."""
    charsmap = state.charsmap
    strings = state.strings
    user_da = state.user_da
    user_val = state.user_val
    has_charsmap = state.has_charsmap
    has_user = state.has_user
    collapse = state.collapse
    escape = state.escape
    dummy = state.dummy_prefix
    ascii_plain = state.ascii_plain
    n_docs = len(offsets) - 1
    need = normalized_room(offsets)
    out = room if len(room) >= need else np.empty(need, np.uint8)
    out_offsets = np.empty(n_docs + 1, np.int64)
    replaced = np.zeros(n_docs, np.int64)
    space_len = 3 if escape else 1
    j = 0
    out_offsets[0] = 0
    for d in range(n_docs):
        at = offsets[d]
        end = offsets[d + 1]
        doc_start = j
        bad = 0
        prev_space = collapse
        started = 0 if collapse else 1
        if not collapse:
            if at < end and dummy:
                out = grown(out, j + 3)
                if escape:
                    out[j] = 0xE2
                    out[j + 1] = 0x96
                    out[j + 2] = 0x81
                else:
                    out[j] = 0x20
                j += space_len
        while at < end:
            # the replacement at `at`: src[r0:r0 + rn], consuming n input bytes
            src = SRC_INPUT
            r0 = at
            rn = 0
            n = 0
            b = np.int64(data[at])
            if b < 0x80 and not has_user:
                # ASCII: the charsmap walk is needed only where a key may start (a table
                # of the first two bytes)
                if at + 1 < end:
                    c = np.int64(data[at + 1])
                    if c < 0x80 and ascii_plain[b * 129 + c]:
                        n = 1
                elif ascii_plain[b * 129 + 128]:
                    n = 1
                if n == 1 and b != 0x20 and started:
                    # the common case, written out: a plain ASCII character, not a space
                    if j + 1 > len(out):
                        out = grown(out, j + 1)
                    out[j] = b
                    j += 1
                    prev_space = 0
                    at += 1
                    continue
                rn = n
            if n == 0 and has_user:
                n = user_prefix(user_da, user_val, data, at, end)
                rn = n
            if n == 0 and has_charsmap:
                n, value = charsmap_match(charsmap, data, at, end)
                if n > 0:
                    src = SRC_STRINGS
                    r0 = value
                    rn = 0
                    while strings[r0 + rn] != 0:
                        rn += 1
            if n == 0:
                ok, n = valid_char_len(data, at, end)
                rn = n
                if not ok:
                    src = SRC_FFFD
                    rn = 3
                    bad += 1
            at += n
            if not started:
                # leading spaces (after normalization) are dropped, then the dummy prefix
                if rn == 1 and (data[r0] if src == SRC_INPUT else strings[r0]) == 0x20 \
                        and src != SRC_FFFD:
                    continue
                started = 1
                if dummy:
                    if j + 3 > len(out):
                        out = grown(out, j + 3)
                    if escape:
                        out[j] = 0xE2
                        out[j + 1] = 0x96
                        out[j + 2] = 0x81
                    else:
                        out[j] = 0x20
                    j += space_len
            k = 0
            if prev_space:
                while k < rn:
                    if src == SRC_FFFD:
                        break
                    c = data[r0 + k] if src == SRC_INPUT else strings[r0 + k]
                    if c != 0x20:
                        break
                    k += 1
            if k < rn:
                if j + 3 * (rn - k) > len(out):
                    out = grown(out, j + 3 * (rn - k))
                last = 0
                while k < rn:
                    if src == SRC_FFFD:
                        c = 0xEF if k == 0 else (0xBF if k == 1 else 0xBD)
                    elif src == SRC_INPUT:
                        c = data[r0 + k]
                    else:
                        c = strings[r0 + k]
                    if c == 0x20 and escape:
                        out[j] = 0xE2
                        out[j + 1] = 0x96
                        out[j + 2] = 0x81
                        j += 3
                    else:
                        out[j] = c
                        j += 1
                    last = c
                    k += 1
                prev_space = 1 if last == 0x20 else 0
            if not collapse:
                prev_space = 0
        if collapse:
            # trailing spaces (U+2581 when escaping) go, the dummy prefix's too
            if escape:
                while j - doc_start >= 3 and out[j - 3] == 0xE2 and out[j - 2] == 0x96 and \
                        out[j - 1] == 0x81:
                    j -= 3
            else:
                while j > doc_start and out[j - 1] == 0x20:
                    j -= 1
        out_offsets[d + 1] = j
        replaced[d] = bad
    return out[:j], out_offsets, replaced
