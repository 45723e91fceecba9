"""An open-addressing table from a token's symbol string to its id, for looking up millions
of merge parts at load time without a Python dict lookup per merge.

Each slot is a 64-bit word: the high half of the key's hash (a fingerprint) over the token
id, all ones when free. A fingerprint match is confirmed symbol by symbol, so lookups are
exact.
"""
import numpy as np
from numba import njit

from corpustok.kernels.bpe_merge import long_work, merge_long

EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)  # a free slot
LOW = np.uint64(0xFFFFFFFF)


@njit(nogil=True, cache=True, _nrt=False)
def _hash(sym, start, stop):
    h = np.uint64(0xCBF29CE484222325)  # FNV-1a over the symbols, then a 64-bit finalizer
    for j in range(start, stop):
        h = (h ^ np.uint64(sym[j])) * np.uint64(0x100000001B3)
    h = (h ^ (h >> np.uint64(32))) * np.uint64(0xBF58476D1CE4E5B9)
    return h ^ (h >> np.uint64(29))


@njit(nogil=True, cache=True)
def fill_token_table(slots, tok_sym, tok_off, plain, h):
    """Insert the ids ``i`` with ``plain[i]`` into the open-addressing table ``slots`` (a
    power of two >= twice their number, all ones when empty), keyed by their symbols: each
    slot the high half of the hash (a fingerprint) over the id. ``h``: room for the hashes,
    computed first, so that the inserting loop is short and its cache misses overlap."""
    for i in range(len(plain)):
        if plain[i]:
            h[i] = _hash(tok_sym, tok_off[i], tok_off[i + 1])
    mask = len(slots) - 1
    for i in range(len(plain)):
        if plain[i]:
            s = np.int64(h[i] & np.uint64(mask))
            while slots[s] != EMPTY:
                s = (s + 1) & mask
            slots[s] = (h[i] & ~LOW) | np.uint64(i)


@njit(nogil=True, cache=True, _nrt=False)
def _same(tok_sym, tok_off, i, sym, start, stop):
    a = tok_off[i]
    if tok_off[i + 1] - a != stop - start:
        return False
    for j in range(stop - start):
        if tok_sym[a + j] != sym[start + j]:
            return False
    return True


@njit(nogil=True, cache=True, _nrt=False)
def find_token(slots, tok_sym, tok_off, sym, start, stop):
    """The id whose symbols are ``sym[start:stop]``, or -1."""
    h = _hash(sym, start, stop)
    s = np.int64(h & np.uint64(len(slots) - 1))
    while slots[s] != EMPTY:
        i = np.int64(slots[s] & LOW)
        if slots[s] >> np.uint64(32) == h >> np.uint64(32) and \
                _same(tok_sym, tok_off, i, sym, start, stop):
            return i
        s = (s + 1) & (len(slots) - 1)
    return -1


@njit(nogil=True, cache=True)
def lookup_tokens(slots, tok_sym, tok_off, sym, starts, stops, out):
    """``out[q]`` = the id whose symbols are ``sym[starts[q]:stops[q]]``; the first ``q``
    without one, or -1. In passes (hashes, probes by fingerprint, the candidates' offsets,
    the check symbol by symbol) whose iterations are short and independent, so that the
    cache misses of many queries overlap; a fingerprint that matches another token sends
    its query to the full probe."""
    n = len(out)
    h = np.empty(n, np.uint64)
    for q in range(n):
        h[q] = _hash(sym, starts[q], stops[q])
    for q in range(n):
        s = np.int64(h[q] & np.uint64(len(slots) - 1))
        out[q] = -1
        while slots[s] != EMPTY:
            if slots[s] >> np.uint64(32) == h[q] >> np.uint64(32):
                out[q] = np.int64(slots[s] & LOW)
                break
            s = (s + 1) & (len(slots) - 1)
    at = np.empty(n, np.int64)  # where the candidate's symbols begin, -1: none or too long
    for q in range(n):
        i = out[q]
        at[q] = -1
        if i >= 0 and tok_off[i + 1] - tok_off[i] == stops[q] - starts[q]:
            at[q] = tok_off[i]
    for q in range(n):
        same = at[q] >= 0
        for j in range(stops[q] - starts[q] if same else 0):
            if tok_sym[at[q] + j] != sym[starts[q] + j]:
                same = False
                break
        if not same:
            out[q] = -1 if out[q] < 0 else find_token(slots, tok_sym, tok_off, sym, starts[q],
                                                  stops[q])
            if out[q] < 0:
                return q
    return -1


@njit(nogil=True, cache=True)
def token_splits(slots, tok_sym, tok_off, plain):
    """Every way to cut a token ``i`` with ``plain[i]`` into two tokens of the table:
    ``(left, right, merged)`` int64 arrays, by merged id, then cut position. These are the
    pairs tiktoken merges (any adjacent pair whose concatenation is a token, ranked by that
    token). O(total symbols) lookups of O(token length)."""
    total = 0
    for i in range(len(plain)):
        if plain[i]:
            total += max(tok_off[i + 1] - tok_off[i] - 1, 0)
    left = np.empty(total, np.int64)
    right = np.empty(total, np.int64)
    merged = np.empty(total, np.int64)
    n = 0
    for i in range(len(plain)):
        a = tok_off[i]
        b = tok_off[i + 1]
        if not plain[i]:
            continue
        for k in range(a + 1, b):
            x = find_token(slots, tok_sym, tok_off, tok_sym, a, k)
            if x < 0:
                continue
            y = find_token(slots, tok_sym, tok_off, tok_sym, k, b)
            if y >= 0:
                left[n] = x
                right[n] = y
                merged[n] = i
                n += 1
    return left[:n], right[:n], merged[:n]


@njit(nogil=True, cache=True)
def unmergeable(tok_sym, tok_off, plain, sym_id, pairs):
    """Which tokens ``i`` with ``plain[i]`` merging does not reach: the merges of their base
    symbols' ids (``sym_id``, -1 when missing) with ``pairs`` give anything but ``[i]``.

    A chunk whose symbols are a token is emitted whole (tiktoken's rule); for any other token
    merging the chunk gives that token, so only these need the lookup. O(total symbols log)."""
    out = np.zeros(len(plain), np.bool_)
    longest = 1
    for i in range(len(plain)):
        longest = max(longest, tok_off[i + 1] - tok_off[i])
    ids = np.empty(longest, np.int32)
    node, heap = long_work(longest)
    for i in range(len(plain)):
        if not plain[i]:
            continue
        n = 0
        for k in range(tok_off[i], tok_off[i + 1]):
            t = sym_id[tok_sym[k]]
            if t >= 0:
                ids[n] = t
                n += 1
        reached = n == tok_off[i + 1] - tok_off[i] and \
            merge_long(ids, n, pairs, node, heap) == 1 and ids[0] == i
        out[i] = not reached
    return out
