"""Chunk counting for BPE training: the GPT-2 chunks of a batch go into an open-addressing
hash table keyed by the chunk's bytes (FNV-1a), one call per batch; two tables merge with one
call (:func:`count_add`)."""
import numpy as np
from numba import njit

from corpustok.kernels.memory.buffers import grown
from corpustok.kernels.split.fast import split_some

FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)
EMPTY = -1


@njit(nogil=True, cache=True)
def rehash(hashes, n, size):
    """A fresh slot array of ``size`` (a power of two) holding entries ``0..n-1``. O(n)."""
    slots = np.full(size, EMPTY, np.int64)
    mask = size - 1
    for e in range(n):
        s = np.int64(hashes[e] & np.uint64(mask))
        while slots[s] != EMPTY:
            s = (s + 1) & mask
        slots[s] = e
    return slots


@njit(nogil=True, cache=True, _nrt=False)
def _find_key(src, a, b, slots, hashes, key_off, keys):
    """FNV-1a hash of ``src[a:b]`` and its slot in the count table: ``(hash, slot, entry)``,
    entry EMPTY when absent (the slot is then where it goes). O(b - a) expected."""
    h = FNV_OFFSET
    for i in range(a, b):
        h = (h ^ np.uint64(src[i])) * FNV_PRIME
    mask = len(slots) - 1
    s = np.int64(h & np.uint64(mask))
    while True:
        e = slots[s]
        if e == EMPTY:
            return h, s, e
        if hashes[e] == h and key_off[e + 1] - key_off[e] == b - a:
            k = key_off[e] - a
            same = True
            for i in range(a, b):
                if keys[k + i] != src[i]:
                    same = False
                    break
            if same:
                return h, s, e
        s = (s + 1) & mask


@njit(nogil=True, cache=True)
def count_add(src, starts, ends, weights, slots, hashes, counts, key_off, keys, n):
    """Add ``weights[c]`` to the count of byte string ``src[starts[c]:ends[c]]`` for every c.

    The table is ``n`` entries: ``hashes``, ``counts``, keys ``keys[key_off[e]:key_off[e+1]]``
    and an open-addressing ``slots`` array (power of two, at most half full). Arrays grow as
    needed and are returned: ``(slots, hashes, counts, key_off, keys, n)``. O(bytes) expected.
    """
    for c in range(len(starts)):
        a = starts[c]
        b = ends[c]
        h, s, e = _find_key(src, a, b, slots, hashes, key_off, keys)
        if e != EMPTY:
            counts[e] += weights[c]
            continue
        if n + 2 > len(key_off):  # the three arrays keep one length
            hashes = grown(hashes, n + 2)
            counts = grown(counts, n + 2)
            key_off = grown(key_off, n + 2)
        if key_off[n] + b - a > len(keys):
            keys = grown(keys, key_off[n] + b - a)
        hashes[n] = h
        counts[n] = weights[c]
        k = key_off[n]
        for i in range(b - a):
            keys[k + i] = src[a + i]
        key_off[n + 1] = k + b - a
        slots[s] = n
        n += 1
        if 2 * n > len(slots):
            slots = rehash(hashes, n, 2 * len(slots))
    return slots, hashes, counts, key_off, keys, n


@njit(nogil=True, cache=True)
def count_batch(data, offsets, program, slots, hashes, counts, key_off, keys, n):
    """Split every document of a batch into chunks with the split ``program`` and count them into the table of
    :func:`count_add` (same arrays, same return). One call per batch; chunks are gathered in
    blocks of 64K so the scratch memory stays small. O(bytes) expected."""
    block = 1 << 16
    starts = np.empty(block, np.int64)
    ends = np.empty(block, np.int64)
    ones = np.ones(block, np.int64)
    # not a literal 0: split_some would be compiled for it too (``True`` stays a literal: the
    # split compiled for it drops the streaming reach, 3-9% faster than a runtime True)
    m = np.int64(0)
    for d in range(len(offsets) - 1):
        i = offsets[d]
        end = offsets[d + 1]
        while i < end:
            starts[m] = i
            k, i, _ = split_some(data, i, end, program, True, ends, m, block)
            starts[m + 1:k] = ends[m:k - 1]
            m = k
            if m == block:
                slots, hashes, counts, key_off, keys, n = count_add(
                    data, starts, ends, ones, slots, hashes, counts, key_off, keys, n)
                m = 0
    return count_add(data, starts[:m], ends[:m], ones[:m], slots, hashes, counts, key_off,
                     keys, n)
