"""A double-array trie over bytes, built once per vocabulary: the lookup the SentencePiece
kernels walk (Unigram's pieces, the user-defined pieces of the normalizer).

Layout: slot 0 is the root; the child of the node in slot ``s`` by byte ``b`` is slot
``t = base(s) + b + 1``, valid iff ``check(t) == s``. Both halves live in one int64 per slot,
``da[t] = check << 32 | base`` (a free slot has check -1), so a step is one load;
``value[t]`` is the id of the key that ends at ``t`` or -1. ``da`` has 257 slots of padding
past the last base, so ``base + b + 1`` never needs a bounds check.

:func:`build` is Numba over flat arrays (no Python object per node): keys are inserted into
a trie with hashed transitions, then placed breadth-first, each node at the first base whose
slots are free for all its children (first-fit from the lowest free slot). Expected time
O(total key bytes) to insert, plus the slots scanned for bases (small for the sparse tries of
real vocabularies: most nodes have one child, which fits at the first free slot).
"""
import numpy as np
from numba import njit

from corpustok.kernels.memory.buffers import grown

LOW32 = 0xFFFFFFFF


@njit(nogil=True, cache=True)
def _insert(key_bytes, key_off, key_val):
    """``(parent, label, value, n)``: a trie of the keys (node 0 the root), ``label`` the byte
    into each node, ``value`` the value of the key ending there (the first key wins)."""
    cap = len(key_bytes) + 1
    parent = np.empty(cap, np.int64)
    label = np.empty(cap, np.int64)
    value = np.full(cap, -1, np.int64)
    parent[0] = -1
    label[0] = -1
    bits = 4
    while (1 << bits) < 2 * cap:
        bits += 1
    mask = (1 << bits) - 1
    table = np.full(1 << bits, -1, np.int64)
    n = 1
    for k in range(len(key_off) - 1):
        u = 0
        for j in range(key_off[k], key_off[k + 1]):
            c = np.int64(key_bytes[j])
            h = ((u * 257 + c) * 0x9E3779B97F4A7C15) >> 20 & mask
            while True:
                v = table[h]
                if v < 0:
                    table[h] = n
                    parent[n] = u
                    label[n] = c
                    u = n
                    n += 1
                    break
                if parent[v] == u and label[v] == c:
                    u = v
                    break
                h = (h + 1) & mask
        if value[u] < 0:
            value[u] = key_val[k]
    return parent, label, value, n


@njit(nogil=True, cache=True)
def _room(check, base, val, nxt, prv, need):
    """The slot arrays with room for ``need`` slots; the new slots are free and appended to
    the free list (``nxt``/``prv``: a doubly linked ring through the free slots and the
    sentinel slot 0)."""
    old = len(check)
    if need <= old:
        return check, base, val, nxt, prv
    check = grown(check, need)
    size = len(check)
    base = grown(base, size)
    val = grown(val, size)
    nxt = grown(nxt, size)
    prv = grown(prv, size)
    check[old:] = -1
    base[old:] = 0
    val[old:] = -1
    last = prv[0]
    for t in range(old, size):
        nxt[last] = t
        prv[t] = last
        last = t
    nxt[last] = 0
    prv[0] = last
    return check, base, val, nxt, prv


@njit(nogil=True, cache=True)
def build(key_bytes, key_off, key_val):
    """``(da int64, value int32)`` of the keys ``key_bytes[key_off[k]:key_off[k + 1]]`` with
    values ``key_val[k]`` (>= 0); an empty key is ignored."""
    parent, label, value, n = _insert(key_bytes, key_off, key_val)
    # children of each node, sorted by byte (counting sort on the label, stable by parent)
    child_off = np.zeros(n + 1, np.int64)
    for u in range(1, n):
        child_off[parent[u] + 1] += 1
    for u in range(n):
        child_off[u + 1] += child_off[u]
    by_label = np.zeros(257, np.int64)
    for u in range(1, n):
        by_label[label[u] + 1] += 1
    for c in range(256):
        by_label[c + 1] += by_label[c]
    order = np.empty(max(n - 1, 0), np.int64)
    for u in range(1, n):
        order[by_label[label[u]]] = u
        by_label[label[u]] += 1
    fill = child_off[:n].copy()
    child = np.empty(max(n - 1, 0), np.int64)
    for u in order:
        child[fill[parent[u]]] = u
        fill[parent[u]] += 1
    # breadth-first placement; free slots are found through a linked list (used slots are
    # never scanned)
    check = np.full(1, -2, np.int64)  # slot 0: the root (and the free list's sentinel)
    base = np.zeros(1, np.int64)
    val = np.full(1, -1, np.int64)
    nxt = np.zeros(1, np.int64)
    prv = np.zeros(1, np.int64)
    check, base, val, nxt, prv = _room(check, base, val, nxt, prv, 2 * n + 600)
    slot = np.empty(n, np.int64)
    slot[0] = 0
    queue = np.empty(n, np.int64)
    queue[0] = 0
    head, tail = 0, 1
    top = 0
    b = 0
    while head < tail:
        u = queue[head]
        head += 1
        s = slot[u]
        val[s] = value[u]
        a, z = child_off[u], child_off[u + 1]
        if a == z:
            continue
        first = label[child[a]] + 1
        t = nxt[0]
        while True:
            if t == 0 or t + 258 > len(check):  # past the free slots: grow
                last = prv[0]
                check, base, val, nxt, prv = _room(check, base, val, nxt, prv,
                                                   len(check) + 1024)
                t = nxt[last] if t == 0 else t
                continue
            b = t - first
            if b >= 1:
                ok = True
                for k in range(a + 1, z):
                    if check[b + label[child[k]] + 1] != -1:
                        ok = False
                        break
                if ok:
                    break
            t = nxt[t]
        base[s] = b
        for k in range(a, z):
            c = child[k]
            t = b + label[c] + 1
            check[t] = s
            nxt[prv[t]] = nxt[t]  # take slot t off the free list
            prv[nxt[t]] = prv[t]
            slot[c] = t
            queue[tail] = c
            tail += 1
        top = max(top, b + 257)
    size = max(top + 1, 258)  # a walk from any slot stays inside
    da = np.empty(size, np.int64)
    out_val = np.empty(size, np.int32)
    for t in range(size):
        c = check[t] if t < len(check) else -1
        da[t] = (c << 32) | (base[t] if t < len(check) else 0)
        out_val[t] = val[t] if t < len(check) else -1
    da[0] = (np.int64(-1) << 32) | base[0]
    return da, out_val


def build_trie(keys, values=None):
    """``(da, value)`` of a list of ``bytes`` keys (values: their index, or ``values``)."""
    off = np.zeros(len(keys) + 1, np.int64)
    np.cumsum([len(k) for k in keys], out=off[1:])
    data = np.frombuffer(b"".join(keys), np.uint8).copy()  # writable: one signature of build
    vals = np.arange(len(keys), dtype=np.int64) if values is None else \
        np.asarray(values, np.int64)
    return build(data, off, vals)
