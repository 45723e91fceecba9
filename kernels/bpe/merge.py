"""BPE merging: the pair table and the merge loops of one chunk, lowest rank first.

The pair table is open addressing over ``(left_id, right_id)`` keys holding the pair's order
value, one int64 a slot (:func:`build_pair_table`): the merged id itself when merged ids
increase with rank (every vocabulary we know), else the rank, with the merged id of each rank
in a second array; beside it a dense grid answers pairs of two ids below :data:`GRID` (the
bytes and the first merges: three lookups in four) with one load, no hashing or probing. A
short chunk is merged by a quadratic scan (:func:`merge_short`), a longer one with a heap
over a linked list in O(n log n) (:func:`merge_long`), a very long one in linear time with
one bucket per order value (:func:`merge_buckets`) unless the chunk makes a merge the
buckets cannot order (a rank file's token made from later tokens); all apply the lowest-rank
pair first, the leftmost on ties, exactly as HF's ``Word::merge_all`` and GPT-2's ``bpe()``.
"""
from collections import namedtuple

import numpy as np
from numba import njit

from corpustok.kernels.memory.hugepages import advise_huge_pages, huge_page_array
from corpustok.kernels.memory.prefetch import prefetch

_U1 = np.uint64(1)
NO_RANK = np.int64(1) << 62  # rank of a pair the merges do not contain
PAIR_MULT = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15 as int64 (Fibonacci hashing)
LOW32 = np.int64(0xFFFFFFFF)
STALE = -1  # the long merges' order value of a position with no pair (values are >= 0)
ID_BITS = 21  # ids and ranks below 2**21: a slot packs left, right and rank in 63 bits
ID_MASK = np.int64((1 << ID_BITS) - 1)
BUCKET_MIN = 1 << 14  # symbols from which a chunk is merged by buckets first
PREFETCH_AHEAD = 16  # bucket entries whose positions' lines are fetched ahead of their turn
NO_KEY = np.int64(1) << 60  # merge_short's key of no pair (keys of pairs are below 2**37)
SOME_KEY = np.int64(1) << 59  # above every key of a pair, below NO_KEY shifted 65,535 times
GRID_BITS = 9
GRID = 1 << GRID_BITS  # pairs of ids below this are answered by the dense grid (1 MB)
SPECULATE_SLOTS = 1 << 17  # pair tables above 1 MB: merge_short prefetches the likely next merge
NODE = 4  # int32 fields of a position in the long merges, side by side: one line holds them
N_ID, N_RANK, N_NEXT, N_PREV = 0, 1, 2, 3  # its id, its pair's order value, its neighbours


# The pair table (:func:`build_pair_table`): the open-addressing slots, the merged id of each
# rank, the bucket count of merge_buckets, the dense grid of pairs of ids below GRID.
PairTable = namedtuple("PairTable", "slots new_of_rank buckets grid")
# merge_long's work arrays (:func:`long_work`): the positions' fields and the heap.
LongWork = namedtuple("LongWork", "node heap")


@njit(nogil=True, cache=True, _nrt=False)
def _home(key, mask):
    """The first slot probed for ``key`` (``left << 21 | right``) in a table of ``mask + 1``."""
    x = key * PAIR_MULT
    return (x ^ (x >> 29)) & mask


@njit(nogil=True, cache=True, _nrt=False)
def _pair_slot(slots, key):
    """Slot of ``key`` (``left << 21 | right``) in the pair table, or of the empty slot where
    it would go. O(1) expected (load factor <= 1/2, linear probing). A slot is one int64,
    ``key << 21 | order value`` (rank or merged id, -1 when empty): eight slots a line. The
    slot is unsigned, as are its probes: no negative-index fix-up on each read (decision
    0017)."""
    mask = np.uint64(len(slots) - 1)
    s = np.uint64(_home(key, len(slots) - 1))
    while slots[s] >= 0 and slots[s] >> ID_BITS != key:
        s = (s + _U1) & mask
    return s


@njit(nogil=True, cache=True)
def fill_pair_table(left, right, new_id, rank, slots, new_of_rank):
    """Insert merge ``k`` = ``(left[k], right[k]) -> (rank[k], new_id[k])`` for every ``k``
    into ``slots`` (a power of two >= 2 * merges, -1 when empty) and ``new_of_rank``.

    A pair listed twice keeps its last rank, as HF's merge map does. Returns the first merge
    whose rank already names another new id (a rank is one merged token), else -1.
    O(merges) expected."""
    for k in range(len(left)):
        key = (np.int64(left[k]) << ID_BITS) | np.int64(right[k])
        s = _pair_slot(slots, key)
        slots[s] = (key << ID_BITS) | np.int64(rank[k])
        if new_of_rank[rank[k]] >= 0 and new_of_rank[rank[k]] != new_id[k]:
            return k
        new_of_rank[rank[k]] = new_id[k]
    return -1


def build_pair_table(left, right, new_id, rank=None):
    """The pair table ``(slots int64, new_of_rank int32, buckets int, grid int32)`` of merges
    given as three int arrays, with their ranks (default: the merges' order, HF's rule;
    tiktoken's is the merged token's rank, shared by every pair that makes it). When merged
    ids increase with rank, a slot holds the merged id as the order value and ``new_of_rank``
    is empty: a lookup reads one int64 and nothing else (see :func:`merged_id`). ``buckets``:
    the number of order values (:func:`merge_buckets`' buckets). ``grid[a * GRID + b]``: the
    order value of the pair ``(a, b)`` of ids below :data:`GRID`, -1 when they do not merge
    (see :func:`_order`)."""
    left, right, new_id = (np.asarray(a, np.int64) for a in (left, right, new_id))
    rank = np.arange(len(left), dtype=np.int64) if rank is None else np.asarray(rank, np.int64)
    for name, a in (("token id", np.concatenate([left, right, new_id])), ("merge rank", rank)):
        if len(a) and (a.min() < 0 or a.max() >= 1 << ID_BITS):
            raise ValueError(f"a {name} outside 0..{(1 << ID_BITS) - 1} (the pair table packs "
                             f"{ID_BITS} bits of each)")
    size = 16
    while size < 2 * len(left):
        size *= 2
    slots = huge_page_array(size, np.int64, -1)
    new_of_rank = np.full(int(rank.max(initial=0)) + 1, -1, np.int32)
    k = fill_pair_table(left, right, new_id, rank, slots, new_of_rank)
    if k >= 0:
        raise ValueError(f"merge {k} has rank {rank[k]}, which another merge gives another id")
    merged = new_of_rank[new_of_rank >= 0]
    if np.all(merged[1:] > merged[:-1]):  # ids order pairs as ranks do: keep the ids
        used = slots >= 0
        slots[used] = (slots[used] & ~ID_MASK) | new_of_rank[slots[used] & ID_MASK]
        new_of_rank = np.empty(0, np.int32)
    return pair_table(slots, new_of_rank)


def pair_table(slots, new_of_rank):
    """The :data:`PairTable` of filled ``slots`` and ``new_of_rank``: its bucket count and
    grid computed from the slots (also for tables read back from
    :mod:`corpustok.bpe.table_cache`)."""
    return PairTable(slots, new_of_rank, _bucket_count(slots), _grid(slots))


def _grid(slots):
    """The dense grid of the pairs of ids below :data:`GRID` in ``slots``."""
    grid = np.full(GRID * GRID, -1, np.int32)
    used = slots[slots >= 0]
    left, right = (used >> ID_BITS) >> ID_BITS, (used >> ID_BITS) & ID_MASK
    low = (left < GRID) & (right < GRID)
    grid[left[low] * GRID + right[low]] = used[low] & ID_MASK
    return grid


def _bucket_count(slots):
    """``max order value + 1``: the buckets :func:`merge_buckets` needs (0 with no merges)."""
    used = slots[slots >= 0]
    return int((used & ID_MASK).max()) + 1 if len(used) else 0


@njit(nogil=True, cache=True, _nrt=False)
def merged_id(new_of_rank, r):
    """The id a pair of order value ``r`` (not :data:`NO_RANK`) merges into."""
    return r if len(new_of_rank) == 0 else new_of_rank[r]


@njit(nogil=True, cache=True, _nrt=False)
def _rank(slots, a, b):
    """Order value (rank or merged id) of the pair ``(a, b)``, or :data:`NO_RANK`. O(1)
    expected."""
    key = (np.int64(a) << ID_BITS) | np.int64(b)
    v = slots[_pair_slot(slots, key)]
    return v & ID_MASK if v >= 0 else NO_RANK


@njit(nogil=True, cache=True, _nrt=False)
def _prefetch_pair(slots, a, b):
    """Start fetching the pair table's line for ``(a, b)``."""
    prefetch(slots, _home((np.int64(a) << ID_BITS) | np.int64(b), len(slots) - 1))


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _order(grid, slots, a, b):
    """:func:`_rank` of ``(a, b)`` through the grid when both ids are below :data:`GRID`."""
    if (a | b) >> GRID_BITS == 0:
        v = grid[np.int64(a) << GRID_BITS | np.int64(b)]
        return np.int64(v) if v >= 0 else NO_RANK
    return _rank(slots, np.int64(a), np.int64(b))  # one signature for int32 and int64 ids


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _prefetch_order(grid, slots, a, b):
    """Start fetching the line :func:`_order` will read for ``(a, b)``."""
    if (a | b) >> GRID_BITS == 0:
        prefetch(grid, np.int64(a) << GRID_BITS | np.int64(b))
    else:
        _prefetch_pair(slots, np.int64(a), np.int64(b))


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _short_key(grid, slots, a, b, k):
    """The key of the pair ``(a, b)`` at position ``k`` of a short chunk: its order value
    above ``k`` (so the smallest key is the lowest rank, leftmost on ties), or
    :data:`NO_KEY`."""
    r = _order(grid, slots, a, b)
    return r << 16 | k if r != NO_RANK else NO_KEY


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _lowest_two(best, second, key):
    """The two smallest of ``best <= second`` and ``key``, without a branch."""
    return min(best, key), min(second, max(best, key))


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _prefetch_merge(grid, slots, ids, n, key, new_of_rank):
    """Start fetching the lines of the two pairs the merge of ``key`` (a short chunk's) makes."""
    b = key & 0xFFFF
    t = merged_id(new_of_rank, key >> 16)
    if b > 0:
        _prefetch_order(grid, slots, ids[b - 1], t)
    if b + 2 < n:
        _prefetch_order(grid, slots, t, ids[b + 2])


@njit(nogil=True, cache=True, _nrt=False)
def merge_short(ids, n, pairs, keys):
    """Merge ``ids[:n]`` (fewer than 65,536) in place by rescanning for the lowest-rank pair
    (leftmost on ties); returns the new length. ``keys`` (int64) is a work array of ``n``.
    O(n^2), fastest for the short chunks that dominate text.

    Each pair's key packs its order value and position, so the smallest key is the next
    merge; a merge shifts the keys after it down one position (a key minus one; no key stays
    above :data:`SOME_KEY`) and the next smallest is found in the same pass: the keys before
    the merge, the shifted ones and the two new ones. The lines of the two pairs a merge
    makes are prefetched before the shift: merges run one after another, each waiting for
    those lookups. With a pair table larger than :data:`SPECULATE_SLOTS` (beyond L2), those
    of the second-smallest key's merge are prefetched too, the likely next one."""
    slots, new_of_rank, grid = pairs.slots, pairs.new_of_rank, pairs.grid
    speculate = len(slots) > SPECULATE_SLOTS
    best = NO_KEY
    second = NO_KEY
    for k in range(n - 1):
        key = _short_key(grid, slots, ids[k], ids[k + 1], k)
        keys[k] = key
        best, second = _lowest_two(best, second, key)
    while n > 1 and best < SOME_KEY:
        b = best & 0xFFFF
        t = merged_id(new_of_rank, best >> 16)
        _prefetch_merge(grid, slots, ids, n, best, new_of_rank)
        if speculate and second < SOME_KEY:
            _prefetch_merge(grid, slots, ids, n, second, new_of_rank)
        ids[b] = t
        best = NO_KEY
        second = NO_KEY
        for k in range(b - 1):
            best, second = _lowest_two(best, second, keys[k])
        for k in range(b + 1, n - 2):
            ids[k] = ids[k + 1]
            key = keys[k + 1] - 1
            keys[k] = key
            best, second = _lowest_two(best, second, key)
        if b + 1 <= n - 2:
            ids[n - 2] = ids[n - 1]
        n -= 1
        if b > 0:
            key = _short_key(grid, slots, ids[b - 1], t, b - 1)
            keys[b - 1] = key
            best, second = _lowest_two(best, second, key)
        if b < n - 1:
            key = _short_key(grid, slots, t, ids[b + 1], b)
            keys[b] = key
            best, second = _lowest_two(best, second, key)
    return n


@njit(nogil=True, cache=True, _nrt=False)
def _link(ids, node, n):
    """The nodes of ``ids[:n]``: each position live, linked to its neighbours. A long chunk
    outgrows the caches, and a merge step then waits on one line instead of one an array."""
    for k in range(n):
        node[NODE * k + N_ID] = ids[k]
        node[NODE * k + N_NEXT] = k + 1
        node[NODE * k + N_PREV] = k - 1


@njit(nogil=True, cache=True, _nrt=False)
def _compact(ids, node, n):
    """The live positions' ids (the list from 0) to the front of ``ids``; returns their
    count."""
    m = 0
    k = 0
    while k < n:
        ids[m] = node[NODE * k + N_ID]
        m += 1
        k = node[NODE * k + N_NEXT]
    return m


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
def _set_pair(node, n, k, pairs, heap, size):
    """Look up the pair starting at live position ``k`` and push it when the merges hold it."""
    q = node[NODE * k + N_NEXT]
    node[NODE * k + N_RANK] = STALE
    if q < n:
        r = _order(pairs.grid, pairs.slots, node[NODE * k + N_ID], node[NODE * q + N_ID])
        if r != NO_RANK:
            node[NODE * k + N_RANK] = r
            size = _heap_push(heap, size, (r << 32) | k)
    return size


@njit(nogil=True, cache=True)
def long_work(n):
    """Work arrays of :func:`merge_long` for ``n`` symbols: ``(node, heap)``, the positions'
    fields (:data:`NODE` int32 each) and the heap of packed ``(rank << 32) | position``. The
    heap needs ``2n`` slots: at most ``n - 1`` pairs go in first, and each merge pops one entry
    and pushes at most two, over at most ``n - 1`` merges. 32 bytes per symbol in all."""
    if n >= 2**31 - 1:  # int32 links; such a chunk would need 64 GB of work memory anyway
        raise ValueError("a single pre-token chunk of 2**31 symbols or more")
    node, heap = np.empty(NODE * n, np.int32), np.empty(2 * n + 1, np.int64)
    advise_huge_pages(node)  # before their pages are first touched
    advise_huge_pages(heap)
    return LongWork(node, heap)


@njit(nogil=True, cache=True, _nrt=False)
def merge_long(ids, n, pairs, node, heap):
    """Merge ``ids[:n]`` in place with a min-heap of ``(rank, position)`` over a linked list of
    live positions; returns the new length. Stale heap entries are skipped by checking the
    position's current pair rank (a position merged away has none), so each step is
    O(log n): O(n log n) in all.

    Positions keep their original index, so heap order is (rank, leftmost): the same merge
    sequence as :func:`merge_short`. Work arrays from :func:`long_work`.
    """
    size = np.int64(0)  # int64 sizes and positions: one signature of each callee
    _link(ids, node, n)
    for k in range(n):
        size = _set_pair(node, n, k, pairs, heap, size)
    while size > 0:
        item, size = _heap_pop(heap, size)
        k = item & LOW32
        if node[NODE * k + N_RANK] != item >> 32:
            continue
        q = node[NODE * k + N_NEXT]
        r = node[NODE * q + N_NEXT]
        node[NODE * k + N_ID] = merged_id(pairs.new_of_rank, item >> 32)
        node[NODE * q + N_RANK] = STALE
        node[NODE * k + N_NEXT] = r
        if r < n:
            node[NODE * r + N_PREV] = k
        size = _set_pair(node, n, k, pairs, heap, size)
        p = np.int64(node[NODE * k + N_PREV])
        if p >= 0:
            size = _set_pair(node, n, p, pairs, heap, size)
    return _compact(ids, node, n)


@njit(nogil=True, cache=True)
def bucket_work(n, values):
    """Work arrays of :func:`merge_buckets` for ``n`` symbols and ``values`` order values:
    ``(node, ends, order, extra, extra_head)``, int32: the positions' fields side by side
    (:data:`NODE`), where each value's run of initial pairs ends, those pairs by value, and
    the linked entries ``(position, next)`` of the pairs merging makes (at most two a merge);
    36 bytes per symbol and 8 per value (huge pages for each array from 16 MB)."""
    if n >= 2**31 - 1:  # int32 links, as long_work
        raise ValueError("a single pre-token chunk of 2**31 symbols or more")
    node, order, extra = np.empty(NODE * n, np.int32), np.empty(n, np.int32), \
        np.empty(4 * n, np.int32)
    advise_huge_pages(node)  # before their pages are first touched
    advise_huge_pages(order)
    advise_huge_pages(extra)
    return node, np.zeros(values + 1, np.int32), order, extra, np.full(values, -1, np.int32)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _file(node, n, k, j, pairs, extra, extra_head, used):
    """Set the order value of the pair at live position ``k`` (whose right neighbour is
    ``j``) and file ``k`` under it (a later entry of the bucket); returns ``(value or -1,
    entries used)``."""
    r = NO_RANK if j >= n else _order(pairs.grid, pairs.slots, node[NODE * k + N_ID],
                                      node[NODE * j + N_ID])
    if r == NO_RANK:
        node[NODE * k + N_RANK] = STALE
        return -1, used
    node[NODE * k + N_RANK] = r
    extra[2 * used] = k
    extra[2 * used + 1] = extra_head[r]
    extra_head[r] = used
    return r, used + 1


@njit(nogil=True, cache=True, _nrt=False)
def _merge_chain(node, n, k, v, pairs, extra, extra_head, used, hi):
    """Merge the chain of pairs of value ``v`` that holds position ``k``, from its left end
    (the leftmost-first rule); a chain is pairs of ``v`` that overlap or have one pair
    between them (merging the left one makes the right one its neighbour). The merges from
    the left end may stop before ``k``: one can take the node through which the walk there
    linked ``k``'s pair to the chain, and ``k``'s pair then starts a chain of its own (the
    caller merges again while ``k`` holds a pair of ``v``). Returns ``(entries used,
    highest value filed)``, or ``(-1, _)`` at a merge that makes a pair of value ``v`` or
    lower (the table's order is not one the buckets can follow)."""
    while True:  # to the chain's left end
        p = node[NODE * k + N_PREV]
        if p < 0:
            break
        if node[NODE * p + N_RANK] == v:  # overlapping pairs
            k = p
            continue
        p = node[NODE * p + N_PREV]
        if p < 0 or node[NODE * p + N_RANK] != v:
            break
        # one pair between two of v: merging the left one first (BPE's order) makes the pair
        # between them (t, ids[k]), which must be checked before k's pair is merged
        k = p
    t = merged_id(pairs.new_of_rank, v)
    while True:  # merge along the chain
        q = node[NODE * k + N_NEXT]
        r = node[NODE * q + N_NEXT]
        node[NODE * q + N_RANK] = STALE  # q is gone: its entries are stale
        node[NODE * k + N_ID] = t
        node[NODE * k + N_NEXT] = r
        nk = STALE  # the chain goes on at r if r's pair is of v
        if r < n:
            node[NODE * r + N_PREV] = k
            nk = node[NODE * r + N_RANK]
        got, used = _file(node, n, k, r, pairs, extra, extra_head, used)
        if 0 <= got <= v:
            return -1, hi
        hi = max(hi, got)
        p = node[NODE * k + N_PREV]
        if p >= 0:
            got, used = _file(node, n, p, k, pairs, extra, extra_head, used)
            if 0 <= got <= v:
                return -1, hi
            hi = max(hi, got)
        if nk != v:
            return used, hi
        k = r


@njit(nogil=True, cache=True, _nrt=False)
def merge_buckets(ids, n, pairs, node, ends, order, extra, extra_head):
    """Merge ``ids[:n]`` in place like :func:`merge_long`, in O(n + order values), and return
    the new length; or return -1, ``ids`` untouched, at the first merge that makes a pair of
    its own order value or lower. The buckets of order values are emptied lowest first. That
    is BPE's order as long as each merge makes only pairs of higher values: a bucket, once
    reached, gets no more positions, and the pairs of one value touch each other only in
    chains (pairs that overlap or have one pair between them), each merged from its left
    end, as the leftmost-first rule does, whichever of its positions the bucket lists
    first. It holds for every merge of a vocabulary learned merge after merge (GPT-2's,
    HF's); a rank file may have tokens made from later tokens, and where a chunk makes such
    a merge BPE's next step may lie in a bucket already passed.

    A bucket is the initial pairs of its value, sorted by position (a counting sort into
    ``order``, ``ends`` marking where each value's run ends), walked in order with the line
    of the position a few entries ahead prefetched (their memory waits overlap), then the
    pairs merging made, filed in the linked ``extra`` entries and walked with a second
    pointer as far ahead, prefetching too; an entry whose position no longer holds a pair of
    that value is skipped. Work arrays of :func:`bucket_work`."""
    slots, grid = pairs.slots, pairs.grid
    values = len(extra_head)
    lo = values
    hi = np.int64(-1)  # int64, not literals: one signature of _merge_chain
    _link(ids, node, n)
    for k in range(n):  # the initial pairs, counted by value
        r = NO_RANK if k + 1 >= n else _order(grid, slots, ids[k], ids[k + 1])
        if r == NO_RANK:
            node[NODE * k + N_RANK] = STALE
            continue
        node[NODE * k + N_RANK] = r
        ends[r + 1] += 1
        lo = min(lo, r)
        hi = max(hi, r)
    for v in range(values):  # ends[v]: where value v's run starts
        ends[v + 1] += ends[v]
    for k in range(n):  # ends[v]: where it ends
        r = node[NODE * k + N_RANK]
        if r != STALE:
            order[ends[r]] = k
            ends[r] += 1
    used = np.int64(0)
    v = lo
    while v <= hi:
        b = ends[v]
        for i in range(ends[v - 1] if v > 0 else 0, b):
            if i + PREFETCH_AHEAD < b:
                prefetch(node, NODE * order[i + PREFETCH_AHEAD])
            k = order[i]
            while node[NODE * k + N_RANK] == v:  # a chain may end before k (see _merge_chain)
                used, hi = _merge_chain(node, n, k, v, pairs, extra, extra_head, used, hi)
                if used < 0:
                    return -1
        e = extra_head[v]
        ahead = e  # the entry PREFETCH_AHEAD further down the list (no merge changes it)
        for _ in range(PREFETCH_AHEAD):
            if ahead >= 0:
                ahead = extra[2 * ahead + 1]
        while e >= 0:
            if ahead >= 0:
                prefetch(node, NODE * extra[2 * ahead])
                ahead = extra[2 * ahead + 1]
            k = extra[2 * e]
            while node[NODE * k + N_RANK] == v:
                used, hi = _merge_chain(node, n, k, v, pairs, extra, extra_head, used, hi)
                if used < 0:
                    return -1
            e = extra[2 * e + 1]
        v += 1
    return _compact(ids, node, n)
