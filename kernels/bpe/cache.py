"""The chunk cache of byte-level BPE encoding: chunk bytes -> ids, bounded, three parts.

Two inline parts of entries that hold a chunk's bytes and ids together, two entries a set, so
that a hit reads one or two cache lines: the *fast* part, 32-byte entries (two a line) for
chunks of at most :data:`FAST_KEY` bytes and :data:`FAST_IDS` ids (nearly every chunk), and the
*wide* part, 64-byte entries for those of at most :data:`WIDE_KEY` bytes and :data:`WIDE_IDS`
ids (long words, and short ones of scripts the vocabulary knows little); and a general part
``(meta, c_key, c_ids)`` for the rest up to :data:`CACHE_KEY` bytes (4-slot probing). All are
fixed-size flat arrays that evict what goes unused (a use bit an inline entry, a use count a
general slot, aged as the entries around it are written), so memory is constant. The cache is
a pure memo: results never depend on its state. The encoder
(:mod:`corpustok.kernels.bpe.encode`) probes it and fills it on a miss.
"""
from collections import namedtuple

import numpy as np
from numba import njit

from corpustok.kernels.memory.hugepages import huge_page_array
from corpustok.kernels.memory.prefetch import prefetch
from corpustok.kernels.unicode import load_word

CACHE_KEY = 128  # chunks longer than this many bytes are not cached
CACHE_IDS = 64  # nor chunks of more tokens
CACHE_PROBES = 4
HASH, BYTES, IDS, USES = range(4)  # a general slot's meta words; BYTES -1: an empty slot
META = 4
# An inline entry of W words (4 fast, 8 wide): W/2 words of the chunk's bytes (little-endian,
# zero-padded), the length in the top byte of the last (0 everywhere: empty); then the id
# count (bits 0-3), a use bit (4) and ids 0 and 1 (21 bits from bits 11 and 32); then three ids
# a word (from bits 0, 21 and 42).
FAST_WORDS, WIDE_WORDS = 4, 8
FAST_KEY, WIDE_KEY = 15, 31
FAST_IDS, WIDE_IDS = 5, 11
FAST_PER_SLOT, WIDE_PER_SLOT = 16, 2  # entries per slot of the general cache
IN_WIDE = 14  # a fast entry's id count meaning: this chunk's ids are in the wide part
IN_GENERAL = 15  # a wide entry's id count meaning: this chunk's ids are in the general part
USED = np.int64(16)  # an inline entry's use bit, in its first id word
INLINE_ID = np.int64((1 << 21) - 1)  # an id's bits (ids are below 2**21)
K1 = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15
K2 = np.int64(-4658895280553007687)  # 0xBF58476D1CE4E5B9
K3 = np.int64(-7723592293110705685)  # 0x94D049BB133111EB
LENGTH_BYTE = np.int64(0xFF) << 56  # where an inline key keeps the chunk's length
_U1, _U2, _U3 = np.uint64(1), np.uint64(2), np.uint64(3)  # unsigned offsets (line_get)
BYTE_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [-1], np.int64)


@njit(nogil=True, cache=True, _nrt=False)
def same_bytes(a, i, b, j, n):
    """Whether ``a[i:i + n]`` equals ``b[j:j + n]``, 8 bytes at a time. O(n)."""
    k = 0
    while k + 8 <= n:
        if load_word(a, i + k) != load_word(b, j + k):
            return False
        k += 8
    for t in range(k, n):
        if a[i + t] != b[j + t]:
            return False
    return True


# A thread's chunk cache (:func:`chunk_cache`): the general part's slot words, bytes and ids, and
# the two inline parts.
ChunkCache = namedtuple("ChunkCache", "meta key ids fast wide")


def chunk_cache(slots):
    """An empty chunk cache of ``slots`` (a power of two) general slots: ``(meta int64,
    c_key uint8, c_ids int32, fast int64, wide int64)``, slot ``s`` keeping its :data:`META`
    words at ``meta[s * META:]``, its bytes at ``c_key[s * CACHE_KEY:]`` and its ids at
    ``c_ids[s * CACHE_IDS:]``; ``fast`` and
    ``wide`` hold ``FAST_PER_SLOT * slots`` and ``WIDE_PER_SLOT * slots`` inline entries (at
    least one set each), aligned so that a fast set, or a wide entry, is one cache line."""
    meta = np.zeros(slots * META, np.int64)
    meta[BYTES::META] = -1
    return ChunkCache(meta, np.zeros(slots * CACHE_KEY, np.uint8),
                      np.zeros(slots * CACHE_IDS, np.int32),
                      huge_page_array(max(2, FAST_PER_SLOT * slots) * FAST_WORDS, np.int64, 0),
                      huge_page_array(max(2, WIDE_PER_SLOT * slots) * WIDE_WORDS, np.int64, 0))


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
def line_key(data, s, e, words):
    """``(k1, k2, k3, k4, h)`` of chunk ``data[s:e]`` for inline entries of ``words`` words
    (4: at most :data:`FAST_KEY` bytes, ``k3 = k4 = 0``; 8: at most :data:`WIDE_KEY`): its
    bytes as words (masked loads when they can be read), the length in the last one's top
    byte; ``h`` a multiply-xor hash of the bytes and length, the same in both layouts for a
    chunk of at most :data:`FAST_KEY` bytes, so that its fast entry's chunk finds its wide set
    without a second hash (see :func:`wide_key`, :func:`line_set`)."""
    length = e - s
    if s + 4 * words <= len(data):
        k1 = _word(data, s, length)
        k2 = _word(data, s + 8, length - 8)
        k3 = _word(data, s + 16, length - 16) if words == WIDE_WORDS else np.int64(0)
        k4 = _word(data, s + 24, length - 24) if words == WIDE_WORDS else np.int64(0)
    else:
        k1 = _pack(data, s, min(e, s + 8))
        k2 = _pack(data, min(e, s + 8), min(e, s + 16))
        k3 = _pack(data, min(e, s + 16), min(e, s + 24))
        k4 = _pack(data, min(e, s + 24), e)
    h = k1 * K1 ^ k2 * K2 ^ (k3 * K2 + k4) * K1 ^ np.int64(length) * K3
    h ^= h >> 29
    if words == FAST_WORDS:
        k2 |= np.int64(length) << 56
    else:
        k4 |= np.int64(length) << 56
    return k1, k2, k3, k4, h


@njit(nogil=True, cache=True, _nrt=False)
def general_hash(data, s, e):
    """The general part's hash of a chunk ``data[s:e]`` of more than :data:`WIDE_KEY` bytes:
    a multiply-xor over its 8-byte words and its length. A shorter chunk (one the inline
    parts send there) is hashed by :func:`line_key`, which the encoder has already run on it.
    O(e - s) / 8."""
    h = np.int64(e - s) * K3
    k = s
    while k < e:
        w = _word(data, k, e - k) if k + 8 <= len(data) else _pack(data, k, min(e, k + 8))
        h = (h ^ w) * K1
        h ^= h >> 29
        k += 8
    return h


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def line_set(table, words, h):
    """The first word of the set of hash ``h`` in the inline part ``table`` of ``words``-word
    entries (two entries a set)."""
    return ((h >> 16) & (len(table) // (2 * words) - 1)) * (2 * words)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def wide_key(k1, k2):
    """The wide key ``(k1, k2, k3, k4)`` of the chunk whose fast key is ``(k1, k2)``."""
    return k1, k2 & ~LENGTH_BYTE, np.int64(0), k2 & LENGTH_BYTE


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def line_get(table, first, words, k1, k2, k3, k4, out, j):
    """The id count of the entry of key ``(k1 .. k4)`` in the set at ``first`` of ``table``
    (``words``-word entries), -1 for none, its ids copied to ``out[j:]``: every id slot of the
    entry (``out`` has that much slack), so a hit takes no branch on the count.
    :data:`IN_WIDE`, :data:`IN_GENERAL`: the ids are in that part. A hit sets the entry's use
    bit where it is clear, and only then writes the line: a write on every hit (a use count)
    made the next lookups of a frequent chunk wait for it (decision 0009).

    Indices are unsigned (``first`` and ``j`` are never negative): on a signed index Numba
    adds a fix-up for negative ones to every access, about 30 instructions a hit here."""
    half = np.uint64(words // 2)
    u = np.uint64(j)
    for way in range(2):
        b = np.uint64(first + way * words)
        if table[b] == k1 and table[b + _U1] == k2 and \
                (half == _U2 or (table[b + _U2] == k3 and table[b + _U3] == k4)):
            w = table[b + half]
            if w & USED == 0:
                table[b + half] = w | USED
            out[u] = (w >> 11) & INLINE_ID
            out[u + _U1] = (w >> 32) & INLINE_ID
            for t in range(1, words // 2):
                x = table[b + half + np.uint64(t)]
                v = u + np.uint64(3 * t)
                out[v - _U1] = x & INLINE_ID
                out[v] = (x >> 21) & INLINE_ID
                out[v + _U1] = (x >> 42) & INLINE_ID
            return w & 0xF
    return -1


@njit(nogil=True, cache=True, _nrt=False)
def line_put(table, first, words, k1, k2, k3, k4, out, j, n):
    """Keep key ``(k1 .. k4)`` -> ``out[j:j + n]`` (at most the entry's ids, or a count of
    :data:`IN_WIDE` or :data:`IN_GENERAL` and no ids) in the set at ``first``: in an empty
    entry, else in the one not used since the set was last written (the first when both or
    neither were), clearing the other's use bit (a second chance: what stops being used gives
    way)."""
    half = words // 2
    other = first + words
    used0 = table[first + half] & USED
    used1 = table[other + half] & USED
    b = other if table[first + half - 1] != 0 and (table[other + half - 1] == 0 or
                                                    used1 < used0) else first
    keep = other if b == first else first
    table[keep + half] &= ~USED
    m = n if n <= 3 * half - 1 else 0
    table[b] = k1
    table[b + 1] = k2
    if half == 4:
        table[b + 2] = k3
        table[b + 3] = k4
    table[b + half] = n | USED | (_inline_id(out, j, 0, m) << 11) | \
        (_inline_id(out, j, 1, m) << 32)
    for t in range(1, half):
        table[b + half + t] = _inline_id(out, j, 3 * t - 1, m) | \
            (_inline_id(out, j, 3 * t, m) << 21) | (_inline_id(out, j, 3 * t + 1, m) << 42)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _inline_id(out, j, k, m):
    return np.int64(out[j + k]) & INLINE_ID if k < m else np.int64(0)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _first_slot(cache, h):
    """The first general slot probed for hash ``h``."""
    return h & (len(cache.meta) // META - 1)


@njit(nogil=True, cache=True, _nrt=False)
def cache_find(cache, data, s, e, h):
    """Slot holding chunk ``data[s:e]`` (hash ``h``), or ``-1 - slot`` of the slot to fill.

    Probes ``CACHE_PROBES`` consecutive slots; a hit bumps the slot's use count. On a miss the
    slot to fill is an empty one, else the least used, and the probed counts are halved, so
    frequent chunks stay while one-off chunks (most of a text's distinct ones) cycle through.
    O(CACHE_PROBES + chunk length).
    """
    meta, c_key = cache.meta, cache.key
    mask = len(meta) // META - 1
    base = _first_slot(cache, h)
    length = e - s
    empty = -1
    victim = base
    for t in range(CACHE_PROBES):
        slot = (base + t) & mask
        m = slot * META
        if meta[m + BYTES] < 0:
            if empty < 0:
                empty = slot
            continue
        if meta[m + HASH] == h and meta[m + BYTES] == length and \
                same_bytes(data, s, c_key, slot * CACHE_KEY, length):
            if meta[m + USES] < 1 << 20:
                meta[m + USES] += 1
            return slot
        if meta[m + USES] < meta[victim * META + USES]:
            victim = slot
    if empty >= 0:
        return -1 - empty
    for t in range(CACHE_PROBES):
        meta[((base + t) & mask) * META + USES] >>= 1
    return -1 - victim


@njit(nogil=True, cache=True, _nrt=False)
def cache_get(cache, slot, out, j):
    """Copy the ids cached in ``slot`` to ``out[j:]``; returns their count. O(ids)."""
    meta, c_ids = cache.meta, cache.ids
    n = meta[slot * META + IDS]
    # Copies index views from 0: on an index such as j + k, Numba's fix-up of negative
    # indices makes LLVM copy with AVX-512 gathers and scatters (decision 0017).
    src = c_ids[slot * CACHE_IDS:slot * CACHE_IDS + n]
    dst = out[j:j + n]
    for k in range(n):
        dst[k] = src[k]
    return n


@njit(nogil=True, cache=True, _nrt=False)
def cache_put(cache, slot, data, s, e, h, out, j, n):
    """Store chunk ``data[s:e]`` (hash ``h``) -> ``out[j:j + n]`` in ``slot``. O(e - s + n)."""
    meta, c_key, c_ids = cache.meta, cache.key, cache.ids
    m = slot * META
    meta[m + HASH] = h
    meta[m + BYTES] = e - s
    meta[m + IDS] = n
    meta[m + USES] = 1
    key, src = c_key[slot * CACHE_KEY:slot * CACHE_KEY + e - s], data[s:e]
    for k in range(e - s):
        key[k] = src[k]
    ids, got = c_ids[slot * CACHE_IDS:slot * CACHE_IDS + n], out[j:j + n]
    for k in range(n):
        ids[k] = got[k]


@njit(nogil=True, cache=True, _nrt=False)
def general_put(cache, data, s, e, h, out, j, n):
    """Keep chunk ``data[s:e]`` (hash ``h``: :func:`line_key`'s up to :data:`WIDE_KEY` bytes,
    :func:`general_hash`'s beyond) -> ``out[j:j + n]`` in the general cache (unless there
    already)."""
    slot = cache_find(cache, data, s, e, h)
    if slot < 0:
        cache_put(cache, -1 - slot, data, s, e, h, out, j, n)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def general_prefetch(cache, h):
    """Start loading what a hit in the first slot probed for hash ``h`` reads: its meta
    words, its bytes' first line and its ids' first two (32 ids)."""
    slot = _first_slot(cache, h)
    prefetch(cache.meta, slot * META)
    prefetch(cache.key, slot * CACHE_KEY)
    prefetch(cache.ids, slot * CACHE_IDS)
    prefetch(cache.ids, slot * CACHE_IDS + 16)


# --- a word's lookup and keeping, whole (the SentencePiece kernels' words) ----------------
FAST_PART, WIDE_PART, GENERAL_PART, NO_PART = 1, 2, 3, 0  # where a chunk's ids may be cached


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def chunk_key(data, s, e):
    """``(part, k1, k2, k3, k4, h)`` of chunk ``data[s:e]``: the first part that may hold it
    by its length (:data:`FAST_PART` up to :data:`FAST_KEY` bytes, :data:`WIDE_PART` up to
    :data:`WIDE_KEY`, :data:`GENERAL_PART` up to :data:`CACHE_KEY`, else :data:`NO_PART`),
    its inline key there (zeros for the general part) and its hash."""
    size = e - s
    z = np.int64(0)
    if size <= FAST_KEY:
        k1, k2, _, _, h = line_key(data, s, e, FAST_WORDS)
        return FAST_PART, k1, k2, z, z, h
    if size <= WIDE_KEY:
        k1, k2, k3, k4, h = line_key(data, s, e, WIDE_WORDS)
        return WIDE_PART, k1, k2, k3, k4, h
    if size <= CACHE_KEY:
        return GENERAL_PART, z, z, z, z, general_hash(data, s, e)
    return NO_PART, z, z, z, z, z


@njit(nogil=True, cache=True, _nrt=False)
def general_get(cache, data, s, e, h, out, j):
    """The id count of chunk ``data[s:e]`` (hash ``h``) in the general part, its ids copied
    to ``out[j:]``; -1 when it is not there."""
    slot = cache_find(cache, data, s, e, h)
    return cache_get(cache, slot, out, j) if slot >= 0 else -1


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def chunk_get(cache, data, s, e, part, h, k1, k2, k3, k4, out, j):
    """The id count of chunk ``data[s:e]`` (``part``, ``h``, ``k1 .. k4``: its
    :func:`chunk_key`), its ids at ``out[j:]`` (with the slack :func:`line_get` writes), -1
    on a miss: a fast entry may send the chunk to its wide set (:data:`IN_WIDE`), a wide one
    to the general part (:data:`IN_GENERAL`)."""
    if part == FAST_PART:
        n = line_get(cache.fast, line_set(cache.fast, FAST_WORDS, h), FAST_WORDS, k1, k2, k3, k4,
                     out, j)
        if n != IN_WIDE:
            return n
        k1, k2, k3, k4 = wide_key(k1, k2)
        part = WIDE_PART
    if part == WIDE_PART:
        n = line_get(cache.wide, line_set(cache.wide, WIDE_WORDS, h), WIDE_WORDS, k1, k2, k3, k4,
                     out, j)
        if n != IN_GENERAL:
            return n
    if part == NO_PART:
        return np.int64(-1)
    return general_get(cache, data, s, e, h, out, j)


@njit(nogil=True, cache=True, _nrt=False)
def chunk_keep(cache, data, s, e, h, k1, k2, k3, k4, out, j, n):
    """Keep chunk ``data[s:e]`` (at most :data:`CACHE_KEY` bytes) -> ``out[j:j + n]`` in the
    part its length and id count fit (``h``, ``k1 .. k4``: its :func:`chunk_key`); an inline
    entry of a chunk whose ids do not fit it says where they are (:data:`IN_WIDE`,
    :data:`IN_GENERAL`). More than :data:`CACHE_IDS` ids are not kept."""
    if n > CACHE_IDS:
        return
    size = e - s
    if size <= FAST_KEY:
        if n <= FAST_IDS:
            line_put(cache.fast, line_set(cache.fast, FAST_WORDS, h), FAST_WORDS, k1, k2, 0, 0,
                     out, j, n)
            return
        line_put(cache.fast, line_set(cache.fast, FAST_WORDS, h), FAST_WORDS, k1, k2, 0, 0,
                 out, j, IN_WIDE)
        k1, k2, k3, k4 = wide_key(k1, k2)
    if size <= WIDE_KEY:
        first = line_set(cache.wide, WIDE_WORDS, h)
        if n <= WIDE_IDS:
            line_put(cache.wide, first, WIDE_WORDS, k1, k2, k3, k4, out, j, n)
            return
        line_put(cache.wide, first, WIDE_WORDS, k1, k2, k3, k4, out, j, IN_GENERAL)
    general_put(cache, data, s, e, h, out, j, n)
