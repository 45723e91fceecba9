"""BPE merging: the pair table and the two merge loops of one chunk, lowest rank first.

The pair table is open addressing over ``(left_id, right_id)`` keys holding ``(rank,
new_id)`` (:func:`build_pair_table`). A short chunk is merged by a quadratic scan
(:func:`merge_short`), a longer one with a heap over a linked list in O(n log n)
(:func:`merge_long`); both apply the lowest-rank pair first, the leftmost on ties,
exactly as HF's ``Word::merge_all`` and GPT-2's ``bpe()``.
"""
import numpy as np
from numba import njit

NO_RANK = np.int64(1) << 62  # rank of a pair the merges do not contain
PAIR_MULT = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15 as int64 (Fibonacci hashing)
LOW32 = np.int64(0xFFFFFFFF)
STALE = -1  # merge_long's rank of a position whose pair is gone (ranks are >= 0)


@njit(nogil=True, cache=True, _nrt=False)
def _pair_slot(pairs, key):
    """Slot of ``key`` in the pair table, or of the empty slot where it would go. O(1)
    expected (load factor <= 1/2, linear probing). Slot ``s`` is ``pairs[2s]`` (the key) and
    ``pairs[2s + 1]`` (the value): one cache line per lookup."""
    mask = (len(pairs) >> 1) - 1
    x = key * PAIR_MULT
    s = (x ^ (x >> 29)) & mask
    while pairs[2 * s] != -1 and pairs[2 * s] != key:
        s = (s + 1) & mask
    return s


@njit(nogil=True, cache=True)
def fill_pair_table(left, right, new_id, rank, pairs):
    """Insert merge ``k`` = ``(left[k], right[k]) -> (rank[k], new_id[k])`` for every ``k``
    into ``pairs`` (2 * a power of two >= 2 * merges entries, keys -1 when empty).

    A pair listed twice keeps its last rank, as HF's merge map does. O(merges) expected.
    """
    for k in range(len(left)):
        key = (np.int64(left[k]) << 32) | np.int64(right[k])
        s = _pair_slot(pairs, key)
        pairs[2 * s] = key
        pairs[2 * s + 1] = (np.int64(rank[k]) << 32) | np.int64(new_id[k])


def build_pair_table(left, right, new_id, rank=None):
    """The pair table (flat int64 key/value slots) of merges given as three int arrays, with
    their ranks (default: the merges' order, HF's rule; tiktoken's is the merged token's rank,
    shared by every pair that makes it)."""
    size = 16
    while size < 2 * len(left):
        size *= 2
    pairs = np.zeros(2 * size, np.int64)
    pairs[0::2] = -1
    rank = np.arange(len(left), dtype=np.int64) if rank is None else rank
    fill_pair_table(np.asarray(left, np.int64), np.asarray(right, np.int64),
                    np.asarray(new_id, np.int64), np.asarray(rank, np.int64), pairs)
    return pairs


@njit(nogil=True, cache=True, _nrt=False)
def _pair(pairs, a, b):
    """``rank << 32 | new_id`` of the pair ``(a, b)``, or -1. O(1) expected."""
    key = (np.int64(a) << 32) | np.int64(b)
    s = _pair_slot(pairs, key)
    if pairs[2 * s] == key:
        return pairs[2 * s + 1]
    return -1


@njit(nogil=True, cache=True, _nrt=False)
def merge_short(ids, n, pairs, rank, new):
    """Merge ``ids[:n]`` in place by rescanning for the lowest-rank pair (leftmost on ties);
    returns the new length. O(n^2), fastest for the short chunks that dominate text."""
    for k in range(n - 1):
        v = _pair(pairs, ids[k], ids[k + 1])
        rank[k] = NO_RANK if v < 0 else v >> 32
        new[k] = v & LOW32
    while n > 1:
        best = NO_RANK
        b = -1
        for k in range(n - 1):
            if rank[k] < best:
                best = rank[k]
                b = k
        if b < 0:
            break
        ids[b] = new[b]
        for k in range(b + 1, n - 1):
            ids[k] = ids[k + 1]
        for k in range(b + 1, n - 2):
            rank[k] = rank[k + 1]
            new[k] = new[k + 1]
        n -= 1
        for k in range(max(b - 1, 0), min(b + 1, n - 1)):
            v = _pair(pairs, ids[k], ids[k + 1])
            rank[k] = NO_RANK if v < 0 else v >> 32
            new[k] = v & LOW32
    return n


@njit(nogil=True, cache=True, _nrt=False)
def _heap_push(heap, size, item):
    """Push onto the binary min-heap ``heap[:size]`` (which has room); returns the size."""
    k = size
    while k > 0:
        p = (k - 1) >> 1
        if heap[p] <= item:
            break
        heap[k] = heap[p]
        k = p
    heap[k] = item
    return size + 1


@njit(nogil=True, cache=True, _nrt=False)
def _heap_pop(heap, size):
    """Remove the minimum of ``heap[:size]`` (size > 0); returns ``(item, new size)``."""
    top = heap[0]
    size -= 1
    item = heap[size]
    k = 0
    while True:
        c = 2 * k + 1
        if c >= size:
            break
        if c + 1 < size and heap[c + 1] < heap[c]:
            c += 1
        if heap[c] >= item:
            break
        heap[k] = heap[c]
        k = c
    heap[k] = item
    return top, size


@njit(nogil=True, cache=True, _nrt=False)
def _set_pair(ids, nxt, n, k, pairs, rank, new, heap, size):
    """Look up the pair starting at live position ``k`` and push it when the merges hold it."""
    q = nxt[k]
    rank[k] = STALE
    if q < n:
        v = _pair(pairs, ids[k], ids[q])
        if v >= 0:
            rank[k] = v >> 32
            new[k] = v & LOW32
            size = _heap_push(heap, size, ((v >> 32) << 32) | k)
    return size


@njit(nogil=True, cache=True)
def long_work(n):
    """Work arrays of :func:`merge_long` for ``n`` symbols: ``(rank, new, nxt, prv, heap)``,
    int32 but for the heap of packed ``(rank << 32) | position``. The heap needs ``2n`` slots:
    at most ``n - 1`` pairs go in first, and each merge pops one entry and pushes at most two,
    over at most ``n - 1`` merges. 32 bytes per symbol in all."""
    if n >= 2**31 - 1:  # int32 links; such a chunk would need 64 GB of work memory anyway
        raise ValueError("a single pre-token chunk of 2**31 symbols or more")
    return (np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n, np.int32),
            np.empty(n, np.int32), np.empty(2 * n + 1, np.int64))


@njit(nogil=True, cache=True, _nrt=False)
def merge_long(ids, n, pairs, rank, new, nxt, prv, heap):
    """Merge ``ids[:n]`` in place with a min-heap of ``(rank, position)`` over a linked list of
    live positions; returns the new length. Stale heap entries are skipped by checking the
    position's current pair rank, so each step is O(log n): O(n log n) in all.

    Positions keep their original index, so heap order is (rank, leftmost): the same merge
    sequence as :func:`merge_short`. Work arrays from :func:`long_work`.
    """
    size = 0
    for k in range(n):
        nxt[k] = k + 1
        prv[k] = k - 1
    for k in range(n):
        size = _set_pair(ids, nxt, n, k, pairs, rank, new, heap, size)
    while size > 0:
        item, size = _heap_pop(heap, size)
        k = item & LOW32
        if ids[k] < 0 or rank[k] != item >> 32:
            continue
        q = nxt[k]
        ids[k] = new[k]
        ids[q] = -1
        rank[q] = STALE
        r = nxt[q]
        nxt[k] = r
        if r < n:
            prv[r] = k
        size = _set_pair(ids, nxt, n, k, pairs, rank, new, heap, size)
        if prv[k] >= 0:
            size = _set_pair(ids, nxt, n, prv[k], pairs, rank, new, heap, size)
    m = 0
    k = 0
    while k < n:
        ids[m] = ids[k]
        m += 1
        k = nxt[k]
    return m
