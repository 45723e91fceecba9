"""Every split of a SentencePiece BPE model's mergeable pieces into two symbols, in one call.

The pair table of :mod:`corpustok.sentencepiece.bpe` holds, for each mergeable piece, every
cut at a character boundary whose two sides are both symbols (pieces, or characters that are
no piece). Cut in Python, a slice and a dict lookup each side, Gemma's 256,000 pieces took 1.2
s of every load (2026-12-06). Here the symbols are an open-addressing table of their UTF-8
bytes (FNV-1a), and each piece's prefixes are hashed as they grow. The splits come out in the
order the Python loop gave them, piece by piece, then left to right: a repeated pair's last
merge wins in the pair table, so the order is part of the result.
"""
import numpy as np
from numba import njit

from corpustok.kernels.bpe.cache import same_bytes
from corpustok.kernels.memory.buffers import grown

FNV_OFFSET = np.int64(-3750763034362895579)  # FNV-1a 64-bit offset basis, as an int64
FNV_PRIME = np.int64(1099511628211)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _hash(data, a, b, h):
    """FNV-1a of ``data[a:b]``, continued from ``h``."""
    for t in range(a, b):
        h = (h ^ np.int64(data[t])) * FNV_PRIME
    return h


@njit(nogil=True, cache=True, _nrt=False)
def _find(slots, key_bytes, key_off, data, a, b, h):
    """The key index of ``data[a:b]`` (hash ``h``) in ``slots``, or -1."""
    mask = len(slots) - 1
    s = h & mask
    n = b - a
    while slots[s] >= 0:
        k = slots[s]
        if key_off[k + 1] - key_off[k] == n and same_bytes(data, a, key_bytes, key_off[k], n):
            return k
        s = (s + 1) & mask
    return -1


@njit(nogil=True, cache=True)
def piece_splits(key_bytes, key_off, key_id, piece_bytes, piece_off, merge_ids):
    """``(left, right, merged)`` int64: for each piece ``i`` of ``merge_ids`` in order
    (``piece_bytes[piece_off[i]:piece_off[i + 1]]``, UTF-8), each cut at a character boundary,
    left to right, whose prefix and suffix are both symbols: their ids and ``i``. Symbol ``k``
    is ``key_bytes[key_off[k]:key_off[k + 1]]`` with id ``key_id[k]`` (keys distinct).
    O(symbol bytes + sum over pieces of their length squared)."""
    size = 16
    while size < 2 * len(key_id):
        size *= 2
    slots = np.full(size, -1, np.int64)
    for k in range(len(key_id)):
        s = _hash(key_bytes, key_off[k], key_off[k + 1], FNV_OFFSET) & (size - 1)
        while slots[s] >= 0:
            s = (s + 1) & (size - 1)
        slots[s] = k
    cap = len(merge_ids) + 16
    left = np.empty(cap, np.int64)
    right = np.empty(cap, np.int64)
    merged = np.empty(cap, np.int64)
    n = 0
    for i in merge_ids:
        a, b = piece_off[i], piece_off[i + 1]
        h = FNV_OFFSET
        for cut in range(a + 1, b):
            h = _hash(piece_bytes, cut - 1, cut, h)
            if piece_bytes[cut] & 0xC0 == 0x80:  # inside a character
                continue
            x = _find(slots, key_bytes, key_off, piece_bytes, a, cut, h)
            if x < 0:
                continue
            y = _find(slots, key_bytes, key_off, piece_bytes, cut, b,
                      _hash(piece_bytes, cut, b, FNV_OFFSET))
            if y < 0:
                continue
            left, right, merged = grown(left, n + 1), grown(right, n + 1), grown(merged, n + 1)
            left[n], right[n], merged[n] = key_id[x], key_id[y], i
            n += 1
    return left[:n], right[:n], merged[:n]

