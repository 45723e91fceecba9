"""HF ``tokenizers``' normalizer steps of a Unigram ``tokenizer.json`` over a batch of
segments (decision 0037). The readable reference is
:meth:`corpustok.sentencepiece.hf_unigram_reference.Reference.normalize`; this kernel follows
it step for step, on valid UTF-8 (the caller replaces invalid bytes first).

Steps (:data:`PRECOMPILED`, :data:`STRIP`, :data:`REPLACE`, :data:`SPACE_RUNS`,
:data:`NFKD`, :data:`STRIP_ACCENTS`, :data:`LOWERCASE`), in the file's order, each from one
scratch buffer into the other:

- ``Precompiled``: the text is cut into extended grapheme clusters (UAX #29, the rules of
  :func:`cluster_end` over the property table of ``tools/gen_grapheme_props.py``). A cluster
  of fewer than 6 bytes that a charsmap key begins is replaced whole by the replacement of
  the *shortest* such key (HF's ``transform``: the first of ``common_prefix_search``, which
  stops at a NUL byte); otherwise each character by its own key's replacement, or kept. A run
  of ASCII bytes that are no key alone (``ascii_plain``, read at load time; CR never) is
  copied at once: two ASCII characters are one cluster only as CR LF, and the run's last
  byte before a non-ASCII one goes the general way (it may begin ``e`` + U+0301).
- ``Strip``: White_Space characters off the left and/or right end.
- ``Replace`` of a string: leftmost, non-overlapping occurrences.
- ``Replace`` of the regex ``" {2,}"``: every run of two or more spaces.
- ``NFKD``, ``StripAccents``, ``Lowercase`` (the json ``transformers`` writes for ALBERT):
  :mod:`.hf_unicode`, over tables read from HF ``tokenizers`` itself (decision 0039).

Time O(bytes x (longest key + steps)); the scratch buffers grow inside the kernel.
"""
from collections import namedtuple

import numpy as np
from numba import njit

from corpustok.kernels.memory.buffers import grown
from corpustok.kernels.sentencepiece.hf_unicode import lowercase, nfkd, strip_accents
from corpustok.kernels.sentencepiece.normalize import _darts_offset
from corpustok.kernels.unicode import char_at, put_bytes

PRECOMPILED, STRIP, REPLACE, SPACE_RUNS, NFKD, STRIP_ACCENTS, LOWERCASE = 1, 2, 3, 4, 5, 6, 7

HfNormState = namedtuple("HfNormState", [
    "kinds",      # int64 [steps]: PRECOMPILED, STRIP, REPLACE, SPACE_RUNS, NFKD, ...
    "args",       # int64 [steps, 2]: STRIP (left, right); others unused
    "pattern",    # uint8: the REPLACE patterns, one after another
    "pattern_off",  # int64 [steps + 1]: step k's pattern is pattern[off[k]:off[k + 1]]
    "content",    # uint8: the REPLACE / SPACE_RUNS contents
    "content_off",  # int64 [steps + 1]
    "charsmap",   # uint32 Darts units of the Precompiled step (one zero unit: none)
    "strings",    # uint8: its NUL-terminated replacement strings
    "ascii_plain",  # uint8 [128]: 1 for an ASCII byte that no charsmap key is (CR: 0)
    "props",      # uint8 [0x110000]: grapheme properties (see tools/gen_grapheme_props.py)
    "unicode",    # HfUnicodeTables of NFKD, STRIP_ACCENTS, LOWERCASE (hf_unicode.py)
])

# Grapheme_Cluster_Break values (bits 0-3 of a property)
CR, LF, CONTROL, EXTEND, ZWJ, RI, PREPEND, SPACING, L, V, T, LV, LVT = range(1, 14)
PICTO = 16          # Extended_Pictographic
INCB_CONSONANT, INCB_EXTEND, INCB_LINKER = 1, 2, 3  # bits 5-6


@njit(nogil=True, cache=True, _nrt=False)
def is_white_space(cp):
    """Rust's ``char::is_whitespace``: the White_Space property."""
    return (9 <= cp <= 13) or cp == 0x20 or cp == 0x85 or cp == 0xA0 or cp == 0x1680 or \
        (0x2000 <= cp <= 0x200A) or cp == 0x2028 or cp == 0x2029 or cp == 0x202F or \
        cp == 0x205F or cp == 0x3000


@njit(nogil=True, cache=True, _nrt=False)
def cluster_end(data, at, end, props):
    """End of the extended grapheme cluster that begins at ``data[at]`` (rules GB3-GB13 of
    UAX #29, GB9c included)."""
    cp, n = char_at(data, at)
    p = np.int64(props[cp])
    prev = p & 15
    emoji = 1 if p & PICTO else 0      # 1: ExtPict Extend*, 2: ... then ZWJ
    ri = 1 if prev == RI else 0        # regional indicators in a row
    incb = 1 if (p >> 5) == INCB_CONSONANT else 0  # 1: consonant [extend]*, 2: a linker too
    i = at + n
    while i < end:
        cp, n = char_at(data, i)
        q = np.int64(props[cp])
        cur = q & 15
        cb = q >> 5
        if prev == CR and cur == LF:
            joined = True
        elif prev == CR or prev == LF or prev == CONTROL or \
                cur == CR or cur == LF or cur == CONTROL:
            joined = False
        elif prev == L and (cur == L or cur == V or cur == LV or cur == LVT):
            joined = True
        elif (prev == LV or prev == V) and (cur == V or cur == T):
            joined = True
        elif (prev == LVT or prev == T) and cur == T:
            joined = True
        elif cur == EXTEND or cur == ZWJ or cur == SPACING or prev == PREPEND:
            joined = True
        elif cb == INCB_CONSONANT and incb == 2:
            joined = True
        elif prev == ZWJ and (q & PICTO) and emoji == 2:
            joined = True
        elif prev == RI and cur == RI and ri % 2 == 1:
            joined = True
        else:
            joined = False
        if not joined:
            return i
        if q & PICTO:
            emoji = 1
        elif cur == EXTEND and emoji == 1:
            emoji = 1
        elif cur == ZWJ and emoji == 1:
            emoji = 2
        else:
            emoji = 0
        ri = ri + 1 if cur == RI else 0
        if cb == INCB_CONSONANT:
            incb = 1
        elif cb == INCB_LINKER and incb >= 1:
            incb = 2
        elif not (cb == INCB_EXTEND and incb >= 1):
            incb = 0
        prev = cur
        i += n
    return end


@njit(nogil=True, cache=True, _nrt=False)
def shortest_key(trie, data, at, end):
    """``(found, value)``: the shortest charsmap key that begins ``data[at:end]`` (the walk
    stops at a NUL byte)."""
    pos = _darts_offset(np.int64(trie[0]))
    n = len(trie)
    for i in range(at, end):
        c = np.int64(data[i])
        if c == 0:
            return False, 0
        pos ^= c
        if pos >= n:
            return False, 0
        unit = np.int64(trie[pos])
        if (unit & 0x800000FF) != c:
            return False, 0
        pos ^= _darts_offset(unit)
        if (unit >> 8) & 1:
            return True, np.int64(trie[pos]) & 0x7FFFFFFF
    return False, 0


@njit(nogil=True, cache=True)
def _put_string(strings, value, dst, j):
    k = value
    while strings[k] != 0:
        k += 1
    dst = grown(dst, j + (k - value))
    for t in range(value, k):
        dst[j] = strings[t]
        j += 1
    return dst, j


def ascii_plain(trie):
    """uint8 [128]: 1 for each ASCII byte the Precompiled step keeps as it is (no charsmap key
    is that byte alone), but CR (it begins the cluster CR LF)."""
    one = np.zeros(1, np.uint8)
    plain = np.zeros(128, np.uint8)
    for c in range(128):
        one[0] = c
        plain[c] = c != 13 and not shortest_key(trie, one, 0, 1)[0]
    return plain


@njit(nogil=True, cache=True)
def _precompiled(src, n, dst, state):
    trie = state.charsmap
    strings = state.strings
    props = state.props
    plain = state.ascii_plain
    dst = grown(dst, n)
    j = 0
    i = 0
    while i < n:
        if src[i] < 128 and plain[src[i]]:
            # a run of plain ASCII: one cluster per byte (two ASCII characters join only as
            # CR LF, and CR is not plain), each kept; the last one before a non-ASCII byte
            # may begin a longer cluster (e + U+0301) and goes the general way
            r = i + 1
            while r < n and src[r] < 128 and plain[src[r]]:
                r += 1
            if r < n and src[r] >= 128:
                r -= 1
            dst = grown(dst, j + (r - i))
            j = put_bytes(src, i, r - i, dst, j)
            if r > i:
                i = r
                continue
        g = cluster_end(src, i, n, props)
        if g - i < 6:
            found, value = shortest_key(trie, src, i, g)
            if found:
                dst, j = _put_string(strings, value, dst, j)
                i = g
                continue
        while i < g:
            _, m = char_at(src, i)
            found, value = shortest_key(trie, src, i, i + m)
            if found:
                dst, j = _put_string(strings, value, dst, j)
            else:
                dst = grown(dst, j + m)
                j = put_bytes(src, i, m, dst, j)
            i += m
    return dst, j


@njit(nogil=True, cache=True)
def _strip(src, n, dst, left, right):
    a = 0
    b = n
    if left:
        while a < b:
            cp, m = char_at(src, a)
            if not is_white_space(cp):
                break
            a += m
    if right:
        while b > a:
            k = b - 1
            while src[k] & 0xC0 == 0x80:
                k -= 1
            cp, _ = char_at(src, k)
            if not is_white_space(cp):
                break
            b = k
    dst = grown(dst, b - a)
    for t in range(a, b):
        dst[t - a] = src[t]
    return dst, b - a


@njit(nogil=True, cache=True)
def _replace(src, n, dst, pattern, p0, p1, content, c0, c1, space_runs):
    """A string pattern (``space_runs`` 0) or runs of 2+ spaces (1) replaced by content."""
    m = p1 - p0
    shortest = 2 if space_runs else max(m, 1)
    dst = grown(dst, n + (n // shortest + 1) * (c1 - c0))  # every hit the shortest
    j = 0
    i = 0
    while i < n:
        hit = 0
        if space_runs:
            if src[i] == 0x20 and i + 1 < n and src[i + 1] == 0x20:
                hit = 2
                while i + hit < n and src[i + hit] == 0x20:
                    hit += 1
        elif i + m <= n and src[i] == pattern[p0]:
            hit = m
            for t in range(1, m):
                if src[i + t] != pattern[p0 + t]:
                    hit = 0
                    break
        if hit:
            for t in range(c0, c1):
                dst[j] = content[t]
                j += 1
            i += hit
        else:
            dst[j] = src[i]
            j += 1
            i += 1
    return dst, j


@njit(nogil=True, cache=True)
def hf_normalized_room(offsets):
    """The bytes :func:`hf_normalize_batch` first reserves for the segments of ``offsets``:
    their own and a quarter more (it grows past that where the steps lengthen the text)."""
    total = offsets[len(offsets) - 1] - offsets[0]
    return max(16, total + total // 4 + 16)


@njit(nogil=True, cache=True)
def hf_normalize_batch(data, offsets, state, room):
    """``(out uint8, out_offsets int64 [n+1])``: the steps of ``state`` on each segment
    ``data[offsets[s]:offsets[s + 1]]`` (valid UTF-8), written into ``room`` when it holds
    :func:`hf_normalized_room` (a pool's memory, decision 0046), else (an empty one) into a
    new array."""
    n_seg = len(offsets) - 1
    need = hf_normalized_room(offsets)
    out = room if len(room) >= need else np.empty(need, np.uint8)
    out_offsets = np.empty(n_seg + 1, np.int64)
    out_offsets[0] = 0
    a = np.empty(256, np.uint8)
    b = np.empty(256, np.uint8)
    kinds = state.kinds
    j = 0
    for s in range(n_seg):
        lo, hi = offsets[s], offsets[s + 1]
        n = hi - lo
        a = grown(a, n)
        for t in range(n):
            a[t] = data[lo + t]
        for k in range(len(kinds)):
            kind = kinds[k]
            if kind == PRECOMPILED:
                b, n = _precompiled(a, n, b, state)
            elif kind == STRIP:
                b, n = _strip(a, n, b, state.args[k, 0], state.args[k, 1])
            elif kind == NFKD:
                b, n = nfkd(a, n, b, state.unicode)
            elif kind == STRIP_ACCENTS:
                b, n = strip_accents(a, n, b, state.unicode)
            elif kind == LOWERCASE:
                b, n = lowercase(a, n, b, state.unicode)
            else:
                b, n = _replace(a, n, b, state.pattern, state.pattern_off[k],
                                state.pattern_off[k + 1], state.content, state.content_off[k],
                                state.content_off[k + 1], 1 if kind == SPACE_RUNS else 0)
            a, b = b, a
        out = grown(out, j + n)
        for t in range(n):
            out[j + t] = a[t]
        j += n
        out_offsets[s + 1] = j
    return out[:j], out_offsets
