"""An open-addressing table from a token's symbol string to its id, for looking up millions
of merge parts at load time without a Python dict lookup per merge.

Each slot is a 64-bit word: the high half of the key's hash (a fingerprint) over the token
id, all ones when free. A fingerprint match is confirmed symbol by symbol, so lookups are
exact.
"""
from collections import namedtuple

import numpy as np
from numba import njit

from corpustok.kernels.bpe.merge import long_work, merge_long

EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)  # a free slot
LOW = np.uint64(0xFFFFFFFF)


# The encoder's table of tokens emitted whole (tiktoken's rule): the open-addressing ``slots``
# over the tokens' symbol strings ``tok_sym[tok_off[i]:tok_off[i + 1]]`` (empty: the rule is off).
WholeTokens = namedtuple("WholeTokens", "slots tok_sym tok_off")


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


def token_splits(tok_sym, tok_off, plain):
    """Every way to cut a token ``i`` with ``plain[i]`` into two such tokens: ``(left, right,
    merged)`` int64 arrays, by merged id, then cut position. These are the pairs tiktoken merges
    (any adjacent pair whose concatenation is a token, ranked by that token).

    Exact and O(S log n) for S symbols in n tokens, however long a token is (trying every cut
    with a hash lookup costs O(L**2) for a token of L symbols: 41 s for one of 200 KB). In
    lexicographic order, a stack of the tokens that are prefixes of the current one gives each
    token its longest proper prefix token (:func:`_longest_parts`); their chain is every prefix
    token. The same in the order of the reversed tokens gives the suffix tokens, and a cut is a
    prefix and a suffix whose lengths add up to the token's (:func:`_cuts`)."""
    ids = np.flatnonzero(plain & (tok_off[1:] > tok_off[:-1]))
    bits = (int(tok_sym.max(initial=0)) + 1).bit_length()  # a symbol + 1; 0: past the end
    longest = [np.full(len(plain), -1, np.int64) for _ in range(2)]  # prefix, suffix
    for back, parts in enumerate(longest):
        back = bool(back)
        keys = symbol_keys(tok_sym, tok_off, ids, back, bits)
        order = np.argsort(keys)  # numpy's sort: about 3 times Numba's
        ranked, keys = ids[order], keys[order]
        sort_ties(tok_sym, tok_off, ranked, keys, back)
        _longest_parts(tok_sym, tok_off, ranked, back, parts)
    chain = np.empty(len(ids), np.int64)
    none = np.empty(0, np.int64)
    n = _cuts(tok_off, *longest, ids, chain, none, none, none)  # count, then fill
    left, right, merged = (np.empty(n, np.int64) for _ in range(3))
    _cuts(tok_off, *longest, ids, chain, left, right, merged)
    return left, right, merged


@njit(nogil=True, cache=True, _nrt=False)
def _common(sym, off, x, y, back):
    """How many symbols tokens ``x`` and ``y`` share at their start (their end: ``back``)."""
    n = min(off[x + 1] - off[x], off[y + 1] - off[y])
    j = 0
    if back:
        ex, ey = off[x + 1] - 1, off[y + 1] - 1
        while j < n and sym[ex - j] == sym[ey - j]:
            j += 1
    else:
        ex, ey = off[x], off[y]
        while j < n and sym[ex + j] == sym[ey + j]:
            j += 1
    return j


@njit(nogil=True, cache=True, _nrt=False)
def _before(sym, off, x, y, back):
    """Whether token ``x`` sorts before token ``y`` (symbol by symbol, a prefix first; read
    from the end with ``back``)."""
    c = _common(sym, off, x, y, back)
    nx, ny = off[x + 1] - off[x], off[y + 1] - off[y]
    if c == nx or c == ny:
        return nx < ny
    if back:
        return sym[off[x + 1] - 1 - c] < sym[off[y + 1] - 1 - c]
    return sym[off[x] + c] < sym[off[y] + c]


@njit(nogil=True, cache=True)
def symbol_keys(sym, off, ids, back, bits):
    """An int64 per token of ``ids`` ordered as its first symbols (last, read backwards, with
    ``back``) are: as many as fit in ``bits`` each, each plus one, 0 past the token's end.
    Tokens whose keys differ sort as the keys do; :func:`sort_ties` orders those whose keys
    are equal."""
    keys = np.zeros(len(ids), np.int64)
    for q in range(len(ids)):
        t = ids[q]
        n = off[t + 1] - off[t]
        key = np.int64(0)
        for f in range(63 // bits):
            v = np.int64(0)
            if f < n:
                v = np.int64(sym[off[t + 1] - 1 - f] if back else sym[off[t] + f]) + 1
            key = (key << bits) | v
        keys[q] = key
    return keys


@njit(nogil=True, cache=True)
def sort_ties(sym, off, ranked, keys, back):
    """Sort each run of equal ``keys`` (sorted) of the tokens ``ranked`` by their symbols, in
    place: a bottom-up merge sort, whose comparisons cost what the tokens share, so
    O(S log n) at most."""
    buf = np.empty_like(ranked)
    lo = 0
    for k in range(1, len(ranked) + 1):
        if k == len(ranked) or keys[k] != keys[lo]:
            if k - lo > 1:
                _merge_sort(sym, off, ranked, buf, lo, k, back)
            lo = k


@njit(nogil=True, cache=True)
def _merge_sort(sym, off, a, buf, lo, hi, back):
    src, dst = a, buf
    width, swapped = 1, False
    while width < hi - lo:
        for s in range(lo, hi, 2 * width):
            mid, end = min(s + width, hi), min(s + 2 * width, hi)
            i, j = s, mid
            for k in range(s, end):
                if j < end and (i == mid or _before(sym, off, src[j], src[i], back)):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
        src, dst = dst, src
        width, swapped = 2 * width, not swapped
    if swapped:
        a[lo:hi] = buf[lo:hi]


@njit(nogil=True, cache=True)
def _longest_parts(sym, off, ranked, back, parts):
    """``parts[t]``: the longest token that is a proper prefix (suffix: ``back``) of token
    ``t``, -1 for none, for the tokens ``ranked`` in their order (prefix: lexicographic).

    In that order the tokens that are prefixes of a token all come before it, and those of
    the next token are those of this one no longer than what the two share: a stack. Each
    token is pushed once, and what neighbours share adds up to at most S."""
    stack = ranked.copy()  # its first `top` items, by length
    top = 0
    for k in range(len(ranked)):
        t = ranked[k]
        shared = _common(sym, off, ranked[k - 1], t, back) if k else 0
        n = off[t + 1] - off[t]
        while top:
            m = off[stack[top - 1] + 1] - off[stack[top - 1]]
            if m <= shared and m < n:  # equal to t (never in a dict's vocabulary): dropped
                break
            top -= 1
        parts[t] = stack[top - 1] if top else -1
        stack[top] = t
        top += 1


@njit(nogil=True, cache=True)
def _cuts(off, prefix, suffix, ids, chain, left, right, merged):
    """The cuts of the tokens ``ids`` into a prefix token and a suffix token (``prefix``,
    ``suffix``: each token's longest, -1 for none), written to ``left``, ``right``,
    ``merged`` by token, then cut position (nothing written when they are empty); returns
    their number. ``chain``: room for the longest suffix chain. O(prefix and suffix tokens)."""
    n = 0
    for t in ids:
        size = off[t + 1] - off[t]
        m = 0
        y = suffix[t]
        while y >= 0:  # the suffix tokens of t, longest first
            chain[m] = y
            m += 1
            y = suffix[y]
        start = n
        x = prefix[t]
        while x >= 0 and m:  # the prefix tokens of t, longest first; suffixes shortest first
            want = size - (off[x + 1] - off[x])
            while m and off[chain[m - 1] + 1] - off[chain[m - 1]] < want:
                m -= 1
            if m and off[chain[m - 1] + 1] - off[chain[m - 1]] == want:
                if len(merged):
                    left[n], right[n], merged[n] = x, chain[m - 1], t
                n += 1
            x = prefix[x]
        if len(merged):  # by cut position
            for k in range(start, start + (n - start) // 2):
                j = start + n - 1 - k
                left[k], left[j] = left[j], left[k]
                right[k], right[j] = right[j], right[k]
    return n


@njit(nogil=True, cache=True)
def unmergeable(tok_sym, tok_off, plain, sym_id, pairs):
    """Which tokens ``i`` with ``plain[i]`` merging does not reach: the merges of their base
    symbols' ids (``sym_id``, -1 when missing) with ``pairs`` give anything but ``[i]``.

    A chunk whose symbols are a token is emitted whole (tiktoken's rule); for any other token
    merging the chunk gives that token, so only these need the lookup. O(total symbols log)."""
    out = np.zeros(len(plain), np.bool_)
    longest = np.int64(1)  # int64s, not literals: a literal argument compiles a callee again
    for i in range(len(plain)):
        longest = max(longest, tok_off[i + 1] - tok_off[i])
    ids = np.empty(longest, np.int32)
    node, heap = long_work(longest)
    for i in range(len(plain)):
        if not plain[i]:
            continue
        n = np.int64(0)
        for k in range(tok_off[i], tok_off[i + 1]):
            t = sym_id[tok_sym[k]]
            if t >= 0:
                ids[n] = t
                n += 1
        reached = n == tok_off[i + 1] - tok_off[i] and \
            merge_long(ids, n, pairs, node, heap) == 1 and ids[0] == i
        out[i] = not reached
    return out
