"""The chunk cache of byte-level BPE encoding: chunk bytes -> ids, bounded, two parts.

An inline part of 32-byte entries, two to a 64-byte line (a 2-way set), each holding the key
and the ids of a chunk of at most :data:`FAST_KEY` bytes and :data:`FAST_IDS` ids (nearly
every chunk), so a hit reads one cache line; and a general part ``(meta, c_key, c_ids)`` for
the longer ones (4-slot probing). Both are fixed-size flat arrays with least-used eviction
and aging, so memory is constant. The cache is a pure memo: results never depend on its
state. The encoder (:mod:`corpustok.kernels.bpe_encode`) probes it and fills it on a miss.
"""
import numpy as np
from numba import njit

from corpustok.kernels.unicode import load_word

FNV_OFFSET = np.int64(-3750763034362895579)  # 0xCBF29CE484222325
FNV_PRIME = np.int64(1099511628211)
CACHE_KEY = 64  # chunks longer than this many bytes are not cached
CACHE_IDS = 32  # nor chunks of more tokens
CACHE_PROBES = 4
HASH, BYTES, IDS, USES = range(4)  # the cache's meta columns; BYTES -1: an empty slot
# The inline cache: 4 words an entry, 2 entries (a set) a 64-byte line. Word 0: the chunk's
# bytes 0-7, word 1: bytes 8-14 and the length in the top byte (0 everywhere: empty), both
# little-endian and zero-padded; word 2: the id count (bits 0-3), uses (4-10), ids 0 and 1
# (21 bits from bits 11 and 32); word 3: ids 2, 3 and 4 (21 bits from bits 0, 21 and 42).
FAST_WORDS = 4
FAST_KEY = 15
FAST_IDS = 5
FAST_PER_SLOT = 8  # inline entries per slot of the general cache
IN_GENERAL = 15  # an inline id count meaning: this short chunk's ids are in the general cache
USES_ONE = 16  # one use, in word 2
USES_MAX = np.int64(0x7F0)
INLINE_ID = np.int64((1 << 21) - 1)  # an id's bits in words 2 and 3 (ids are below 2**21)
K1 = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15
K2 = np.int64(-4658895280553007687)  # 0xBF58476D1CE4E5B9
BYTE_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [-1], np.int64)


@njit(nogil=True, cache=True, _nrt=False)
def chunk_hash(data, s, e):
    """FNV-1a of ``data[s:e]`` with a final mix. O(e - s)."""
    h = FNV_OFFSET
    for i in range(s, e):
        h = (h ^ np.int64(data[i])) * FNV_PRIME
    return h ^ (h >> 31)


@njit(nogil=True, cache=True, _nrt=False)
def same_bytes(a, i, b, j, n):
    """Whether ``a[i:i + n]`` equals ``b[j:j + n]``. O(n)."""
    for k in range(n):
        if a[i + k] != b[j + k]:
            return False
    return True


def chunk_cache(slots):
    """An empty chunk cache of ``slots`` (a power of two) general slots: ``(meta int64
    [slots, 4], c_key uint8, c_ids int32, inline int64)``, slot ``s`` keeping its bytes at
    ``c_key[s * CACHE_KEY:]`` and its ids at ``c_ids[s * CACHE_IDS:]``; ``inline`` holds
    ``FAST_PER_SLOT * slots`` entries (at least one set) for the chunks of at most
    :data:`FAST_KEY` bytes and :data:`FAST_IDS` ids (nearly all), aligned so that a set is one
    cache line."""
    meta = np.zeros((slots, 4), np.int64)
    meta[:, BYTES] = -1
    n = max(2, FAST_PER_SLOT * slots) * FAST_WORDS
    raw = np.zeros(n + 8, np.int64)
    skip = (-raw.ctypes.data % 64) // 8
    return (meta, np.zeros(slots * CACHE_KEY, np.uint8), np.zeros(slots * CACHE_IDS, np.int32),
            raw[skip:skip + n])


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _pack(data, s, e):
    """``data[s:e]`` (at most 8 bytes) as a little-endian int64, zero-padded."""
    w = np.int64(0)
    for i in range(s, e):
        w |= np.int64(data[i]) << (8 * (i - s))
    return w


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _word(data, s, n):
    """The first ``n`` (clipped to 0..8) of the 8 bytes at ``data[s:s + 8]``, which must all
    exist, as a little-endian int64."""
    return load_word(data, s) & BYTE_MASKS[max(0, min(n, 8))]


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def fast_key(data, s, e, fast):
    """``(k1, k2, first)`` of chunk ``data[s:e]`` (at most :data:`FAST_KEY` bytes) in the
    inline cache ``fast``: its bytes as two words, the length in the second's top byte (two
    loads and masks when 16 bytes can be read), and the first word of its set (a multiply-xor
    hash of the key)."""
    length = e - s
    if s + 16 <= len(data):
        k1 = _word(data, s, length)
        k2 = _word(data, s + 8, length - 8)
    else:
        k1 = _pack(data, s, min(e, s + 8))
        k2 = _pack(data, min(e, s + 8), e)
    k2 |= np.int64(length) << 56
    h = k1 * K1 ^ k2 * K2
    h ^= h >> 29
    first = ((h >> 16) & (len(fast) // (2 * FAST_WORDS) - 1)) * (2 * FAST_WORDS)
    return k1, k2, first


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def fast_get(fast, first, k1, k2, out, j):
    """The id count of the entry of key ``(k1, k2)`` in the set at ``first`` (-1: none), its
    ids copied to ``out[j:]``: all :data:`FAST_IDS` slots (``out`` has that much slack), so a
    hit takes no branch on the count. :data:`IN_GENERAL`: the ids are in the general cache.
    A hit counts a use (up to a ceiling, after which the line is no longer written)."""
    for way in range(2):
        b = first + way * FAST_WORDS
        if fast[b] == k1 and fast[b + 1] == k2:
            w2 = fast[b + 2]
            w3 = fast[b + 3]
            if w2 & USES_MAX != USES_MAX:
                fast[b + 2] = w2 + USES_ONE
            out[j] = (w2 >> 11) & INLINE_ID
            out[j + 1] = (w2 >> 32) & INLINE_ID
            out[j + 2] = w3 & INLINE_ID
            out[j + 3] = (w3 >> 21) & INLINE_ID
            out[j + 4] = (w3 >> 42) & INLINE_ID
            return w2 & 0xF
    return -1


@njit(nogil=True, cache=True, _nrt=False)
def fast_put(fast, first, k1, k2, out, j, n):
    """Keep key ``(k1, k2)`` -> ``out[j:j + n]`` (``n`` <= :data:`FAST_IDS`, or
    :data:`IN_GENERAL` and no ids) in the set at ``first``: in an empty entry, else in the
    less used one, halving the other's uses (aging: what stops being used gives way)."""
    other = first + FAST_WORDS
    uses0 = fast[first + 2] & USES_MAX
    uses1 = fast[other + 2] & USES_MAX
    b = other if fast[first + 1] != 0 and (fast[other + 1] == 0 or uses1 < uses0) else first
    keep = other if b == first else first
    w = fast[keep + 2]
    fast[keep + 2] = (w & ~USES_MAX) | (((w & USES_MAX) >> 1) & USES_MAX)
    m = n if n <= FAST_IDS else 0
    fast[b] = k1
    fast[b + 1] = k2
    fast[b + 2] = n | USES_ONE | (_inline_id(out, j, 0, m) << 11) | \
        (_inline_id(out, j, 1, m) << 32)
    fast[b + 3] = _inline_id(out, j, 2, m) | (_inline_id(out, j, 3, m) << 21) | \
        (_inline_id(out, j, 4, m) << 42)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _inline_id(out, j, k, m):
    return np.int64(out[j + k]) & INLINE_ID if k < m else np.int64(0)


@njit(nogil=True, cache=True, _nrt=False)
def cache_find(cache, data, s, e, h):
    """Slot holding chunk ``data[s:e]`` (hash ``h``), or ``-1 - slot`` of the slot to fill.

    Probes ``CACHE_PROBES`` consecutive slots; a hit bumps the slot's use count. On a miss the
    slot to fill is an empty one, else the least used, and the probed counts are halved, so
    frequent chunks stay while one-off chunks (most of a text's distinct ones) cycle through.
    O(CACHE_PROBES + chunk length).
    """
    meta, c_key, _, _ = cache
    mask = len(meta) - 1
    base = h & mask
    length = e - s
    empty = -1
    victim = base
    for t in range(CACHE_PROBES):
        slot = (base + t) & mask
        if meta[slot, BYTES] < 0:
            if empty < 0:
                empty = slot
            continue
        if meta[slot, HASH] == h and meta[slot, BYTES] == length and \
                same_bytes(data, s, c_key, slot * CACHE_KEY, length):
            if meta[slot, USES] < 1 << 20:
                meta[slot, USES] += 1
            return slot
        if meta[slot, USES] < meta[victim, USES]:
            victim = slot
    if empty >= 0:
        return -1 - empty
    for t in range(CACHE_PROBES):
        meta[(base + t) & mask, USES] >>= 1
    return -1 - victim


@njit(nogil=True, cache=True, _nrt=False)
def cache_get(cache, slot, out, j):
    """Copy the ids cached in ``slot`` to ``out[j:]``; returns their count. O(ids)."""
    meta, _, c_ids, _ = cache
    n = meta[slot, IDS]
    base = slot * CACHE_IDS
    for k in range(n):
        out[j + k] = c_ids[base + k]
    return n


@njit(nogil=True, cache=True, _nrt=False)
def cache_put(cache, slot, data, s, e, h, out, j, n):
    """Store chunk ``data[s:e]`` (hash ``h``) -> ``out[j:j + n]`` in ``slot``. O(e - s + n)."""
    meta, c_key, c_ids, _ = cache
    meta[slot, HASH] = h
    meta[slot, BYTES] = e - s
    meta[slot, IDS] = n
    meta[slot, USES] = 1
    base = slot * CACHE_KEY
    for k in range(e - s):
        c_key[base + k] = data[s + k]
    base = slot * CACHE_IDS
    for k in range(n):
        c_ids[base + k] = out[j + k]


@njit(nogil=True, cache=True, _nrt=False)
def general_put(cache, data, s, e, out, j, n):
    """Keep chunk ``data[s:e]`` -> ``out[j:j + n]`` in the general cache (unless there already)."""
    h = chunk_hash(data, s, e)
    slot = cache_find(cache, data, s, e, h)
    if slot < 0:
        cache_put(cache, -1 - slot, data, s, e, h, out, j, n)
