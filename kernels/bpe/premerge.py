"""BPE pre-merging: the merges of a chunk that provably come first, in one pass of one table read
a symbol, before the merge loop.

The pair ``(X, Y)`` of order value ``r`` at position ``i`` of a token sequence is merged by
BPE (lowest order value first, leftmost on ties) before anything touches ``X`` or ``Y`` when:

- every pair ``(L, X)`` whose ``L`` is a token ending in the symbol the token before ``X``
  ends in has a value above ``r`` (so ``X`` cannot join its left neighbour first, whatever
  that becomes),
- every pair ``(Y, R)`` whose ``R`` is a token starting with the symbol the token after
  ``Y`` starts with has a value above ``r``, and
- every pair that holds the merged token has a value above ``r`` (so merging it early makes
  no pair that could go before a merge BPE does first: true of every pair of a vocabulary
  learned merge after merge, checked pair by pair for rank files).

Then BPE on the sequence with every such pair merged gives BPE's result on the sequence
(decision 0011), whatever tokens it holds. Two such pairs
never overlap: each would need a value below the other's. The three values of every pair of
ids below :data:`corpustok.kernels.bpe.merge.GRID` are packed in one int64 of a dense table
(:func:`premerge_table`); a pair with an id outside it is never merged and bounds its
neighbours to nothing. On a chunk of base symbols one pass takes about half of the merges.
"""
import numpy as np
from numba import njit

from corpustok.kernels.bpe.merge import GRID, GRID_BITS, ID_BITS, ID_MASK, merged_id

FREE = np.int64(ID_MASK)  # a bound no order value reaches (order values below 2**21 - 1)
LEFT_SHIFT = ID_BITS  # entry = value if the pair may be pre-merged (else FREE) |
RIGHT_SHIFT = 2 * ID_BITS  # left bound << 21 | right bound << 42
EDGE = FREE | FREE << LEFT_SHIFT | FREE << RIGHT_SHIFT  # beyond the chunk: no pair, no bound
OUTSIDE = FREE  # a pair with an id outside the table: never merged, its neighbours neither


@njit(nogil=True, cache=True)
def _token_ends(left, right, made, top):
    """The first and last base token of every token (base: a token no pair makes; -1 for a
    token no chain of pairs reaches from base tokens). Passes over the pairs until one changes
    nothing: two for merges learned in order, a few more for rank files."""
    first = np.full(top, -1, np.int64)
    is_made = np.zeros(top, np.bool_)
    for k in range(len(made)):
        is_made[made[k]] = True
    for t in range(top):
        if not is_made[t]:
            first[t] = t
    last = first.copy()
    changed = True
    while changed:
        changed = False
        for k in range(len(made)):
            t = made[k]
            if first[t] < 0 and first[left[k]] >= 0 and last[right[k]] >= 0:
                first[t] = first[left[k]]
                last[t] = last[right[k]]
                changed = True
    return first, last


def premerge_table(pairs):
    """The pre-merge table (GRID * GRID int64) of a pair table from
    :func:`corpustok.kernels.bpe.merge.build_pair_table`. The entry of ids ``(a, b)`` packs
    three values: the pair's order value when it may be pre-merged (else :data:`FREE`); the
    lowest value of a pair ``(L, b)`` over tokens ``L`` ending in the symbol ``a`` ends in
    (the bound when ``(a, b)`` is left of a candidate); and the lowest value of a pair
    ``(a, R)`` over tokens ``R`` starting with the symbol ``b`` starts with (the bound when
    it is right of one). Tokens are told apart by their first and last base token (a token
    no pair makes). Empty when no pair may be pre-merged (Tekken: its bytes are ids from
    1,000 up), so that the pass costs nothing there."""
    slots, new_of_rank = pairs.slots, pairs.new_of_rank
    used = slots[slots >= 0]
    value = used & ID_MASK
    key = used >> ID_BITS
    left, right = key >> ID_BITS, key & ID_MASK
    made = value if len(new_of_rank) == 0 else new_of_rank[value].astype(np.int64)
    top = max(int(max(left.max(initial=0), right.max(initial=0), made.max(initial=0))) + 1, GRID)
    first, last = _token_ends(left, right, made, top)
    # The base tokens tokens below GRID and pairs end in, numbered densely: the bounds are
    # kept by (base token, token below GRID).
    ends = np.concatenate([last[left], first[right], last[:GRID], first[:GRID]])
    bases = np.unique(ends[ends >= 0])
    width = max(len(bases), 1)

    def number(t):
        return np.searchsorted(bases, t)

    lowest_left = np.full(width * GRID, FREE, np.int64)  # (last base of L, X): lowest (L, X)
    sel = (right < GRID) & (last[left] >= 0)
    np.minimum.at(lowest_left, number(last[left[sel]]) * GRID + right[sel], value[sel])
    lowest_right = np.full(GRID * width, FREE, np.int64)  # (Y, first base of R): lowest (Y, R)
    sel = (left < GRID) & (first[right] >= 0)
    np.minimum.at(lowest_right, left[sel] * width + number(first[right[sel]]), value[sel])
    # Lowest value of a pair holding each token: pre-merging a pair must make none below it.
    lowest = np.full(top, FREE, np.int64)
    np.minimum.at(lowest, left, value)
    np.minimum.at(lowest, right, value)
    own = np.full(GRID * GRID, FREE, np.int64)
    ok = (left < GRID) & (right < GRID) & (lowest[made] > value)
    if not ok.any():
        return np.empty(0, np.int64)
    own[left[ok] * GRID + right[ok]] = value[ok]
    a, b = np.divmod(np.arange(GRID * GRID), GRID)
    reached = (last[a] >= 0) & (first[b] >= 0)  # other tokens never appear in a chunk
    a, b = a[reached], b[reached]
    bound_left = np.zeros(GRID * GRID, np.int64)
    bound_left[reached] = lowest_left[number(last[a]) * GRID + b]
    bound_right = np.zeros(GRID * GRID, np.int64)
    bound_right[reached] = lowest_right[a * width + number(first[b])]
    return own | bound_left << LEFT_SHIFT | bound_right << RIGHT_SHIFT


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _entry(pre, a, b):
    """The pre-merge table's entry of ids ``(a, b)`` (:data:`OUTSIDE` beyond the table)."""
    if (a | b) >> GRID_BITS == 0:
        return pre[np.int64(a) << GRID_BITS | np.int64(b)]
    return OUTSIDE


@njit(nogil=True, cache=True, _nrt=False)
def premerge(ids, n, pre, new_of_rank):
    """Merge in place every pair of ``ids[:n]`` that BPE provably merges before anything
    touches its tokens (see the module docstring); returns the new length. One pass, one
    table entry a symbol: O(n). A second pass would be exact too (the table covers every
    pair below GRID), but on text it cost more than the merges it took. An empty ``pre``: no
    pair may be pre-merged."""
    if n < 2 or len(pre) == 0:
        return n
    m = 0
    i = 0
    bound = FREE  # lowest value a pair (token ending as ids[i - 1] does, ids[i]) can have
    here = _entry(pre, ids[0], ids[1])
    while i < n - 1:
        after = _entry(pre, ids[i + 1], ids[i + 2]) if i + 2 < n else EDGE
        r = here & FREE
        if r < bound and r < (after >> RIGHT_SHIFT) & FREE:
            ids[m] = merged_id(new_of_rank, r)
            bound = (after >> LEFT_SHIFT) & FREE
            i += 2
            if i < n - 1:
                here = _entry(pre, ids[i], ids[i + 1])
        else:
            ids[m] = ids[i]
            bound = (here >> LEFT_SHIFT) & FREE
            here = after
            i += 1
        m += 1
    if i == n - 1:
        ids[m] = ids[i]
        m += 1
    return m
