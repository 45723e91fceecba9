"""Builders for the Fast WordPiece kernels: run once per vocabulary and option set.

The trie with failure links and compact failure pops, laid out as a double array over symbols
(see ``kernels/wordpiece/walk.py`` for the layout), and the per-code-point E2E table that fuses BERT
normalization and pre-tokenization. The trie passes are Numba functions over flat arrays (no
Python object per node), so that vocabularies of millions of entries build in seconds.

Time of :func:`build_trie` for ``C`` code points in the tokens and the suffix indicator (``N
<= C + 1`` trie nodes, ``A`` symbols, ``L`` the longest token, ``P`` ids in the pop pool, ``S
>= N`` double-array slots): O(C + A) expected to insert the keys (hashed transitions) and
renumber the nodes; O((N + P) log A) for the failure links and pops, plus at most ``L`` links
passed for each node that has no link (see :func:`_failures`); O(S log A) bases tried for the
double array (see :func:`_place`), each at the cost of its first collision, with free-slot
lookups amortized O(log S) at worst (path halving). ``P`` is part of the output, at most
``N * L``. Memory O(C + S + P).
"""
import numpy as np
from numba import njit

from corpustok.kernels.memory.buffers import grown
from corpustok.kernels.wordpiece.walk import (FAIL, KIND_EXPAND, KIND_ISOLATED, KIND_REMOVED,
                                              KIND_WS, POP_LEN, POP_OFF, TOKEN)

N_CODEPOINTS = 0x110000
WS = -KIND_WS
REMOVED = -KIND_REMOVED


def isolated(sym):
    """Table value of a one-character word with symbol ``sym``."""
    return -((sym << 3) | KIND_ISOLATED)


@njit(nogil=True, cache=True)
def _insert(syms, offs, n_syms):
    """Trie of the keys ``syms[offs[k]:offs[k + 1]]``: key ``k`` is token id ``k``, except the
    last (the suffix indicator), whose id is -1; a later key wins over an equal one.

    Node 0 is the root, the others are numbered as created; the child of ``u`` by symbol ``c``
    is found through an open-addressing table keyed by ``(u, c)``. Returns ``(parent, sym,
    data, suffix_node)``: ``data[u]`` = the id of the key ending at ``u`` or -1.
    """
    cap = len(syms) + 1
    parent = np.empty(cap, np.int32)
    sym = np.empty(cap, np.int32)
    data = np.full(cap, -1, np.int32)
    parent[0] = -1
    sym[0] = 0
    bits = 1
    while (1 << bits) < cap + cap // 2:  # load factor under 2/3
        bits += 1
    table = np.full(1 << bits, -1, np.int32)
    mask = (1 << bits) - 1
    n_keys = len(offs) - 1
    n = 1
    u = 0
    for k in range(n_keys):
        u = 0
        for j in range(offs[k], offs[k + 1]):
            c = syms[j]
            key = np.uint64(u * (n_syms + 1) + c)
            h = np.int64((key * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits))
            while True:
                w = table[h]
                if w < 0:
                    parent[n] = u
                    sym[n] = c
                    table[h] = n
                    u = n
                    n += 1
                    break
                if parent[w] == u and sym[w] == c:
                    u = w
                    break
                h = (h + 1) & mask
        if offs[k + 1] > offs[k]:
            data[u] = k if k < n_keys - 1 else -1
    return parent[:n], sym[:n], data[:n], u


@njit(nogil=True, cache=True)
def _bfs(parent, sym, data, n_syms, suffix_node):
    """The trie renumbered in TF Text's BFS order (the root's subtree but for the suffix
    root's, seeded with the root then the suffix root; children in symbol order), which the
    failure pass needs and which makes the later passes walk the arrays in order.

    Returns ``(parent, sym, data, child_off, child)``: the children of ``u``, in increasing
    symbol order, are ``child[child_off[u]:child_off[u + 1]]``. The suffix root is node 1
    (node 0 where the suffix indicator is empty).
    """
    n = len(sym)
    # Children by parent in symbol order: counting sort by symbol, then stably by parent.
    start = np.zeros(n_syms + 2, np.int64)
    for v in range(1, n):
        start[sym[v] + 1] += 1
    for c in range(n_syms + 1):
        start[c + 1] += start[c]
    by_sym = np.empty(max(n - 1, 0), np.int32)
    for v in range(1, n):
        by_sym[start[sym[v]]] = v
        start[sym[v]] += 1
    off = np.zeros(n + 1, np.int64)
    for v in range(1, n):
        off[parent[v] + 1] += 1
    for u in range(n):
        off[u + 1] += off[u]
    fill = off[:n].copy()
    kids = np.empty(max(n - 1, 0), np.int32)
    for v in by_sym:
        kids[fill[parent[v]]] = v
        fill[parent[v]] += 1
    order = np.empty(n, np.int32)  # old number of each new node
    rank = np.empty(n, np.int32)  # new number of each old node
    order[0] = 0
    tail = 1
    if suffix_node != 0:
        order[1] = suffix_node
        tail = 2
    for head in range(n):
        u = order[head]
        rank[u] = head
        for i in range(off[u], off[u + 1]):
            if kids[i] != suffix_node:
                order[tail] = kids[i]
                tail += 1
    child_off = np.zeros(n + 1, np.int64)
    child = np.empty(max(n - 1, 0), np.int32)
    new_parent = np.empty(n, np.int32)
    new_parent[0] = -1
    for i in range(n):
        u = order[i]
        child_off[i + 1] = child_off[i] + off[u + 1] - off[u]
        for j in range(off[u], off[u + 1]):
            child[child_off[i] + j - off[u]] = rank[kids[j]]
            new_parent[rank[kids[j]]] = i
    return new_parent, sym[order], data[order], child_off, child


@njit(nogil=True, cache=True)
def _child(sym, child_off, child, u, c):
    """Child of ``u`` by symbol ``c`` (binary search), or -1."""
    lo, hi = child_off[u], child_off[u + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        s = sym[child[mid]]
        if s == c:
            return child[mid]
        if s < c:
            lo = mid + 1
        else:
            hi = mid
    return -1


@njit(nogil=True, cache=True)
def _failures(sym, data, child_off, child, suffix_root):
    """Failure links and pops, nodes taken in the BFS order of :func:`_bfs`.

    A node whose string is a token pops that token and fails to the suffix root; any other
    node fails like its parent followed by the same symbol, collecting the pops of the links
    skipped on the way. A node whose pops equal its parent's shares the parent's run of the
    pool. Every link passed but the last of a walk has pops, which go to the pool, so the walks
    that end in a link cost O(N + P) in all; one that ends in none passes at most one link per
    character of the node's string. Returns ``(fail, pop_off, pop_len, pool)`` by node.
    """
    n = len(sym)
    fail = np.full(n, -1, np.int32)
    pop_off = np.zeros(n, np.int64)
    pop_len = np.zeros(n, np.int32)
    pool = np.empty(max(n, 16), np.int32)
    size = 0
    for u in range(n):
        for i in range(child_off[u], child_off[u + 1]):
            v = child[i]
            if v == suffix_root:
                continue
            if data[v] >= 0:
                fail[v] = suffix_root
                pool = grown(pool, size + 1)
                pop_off[v] = size
                pop_len[v] = 1
                pool[size] = data[v]
                size += 1
                continue
            z = fail[u]
            steps = 0
            skipped = 0  # pops of the links passed
            while z >= 0:
                nxt = _child(sym, child_off, child, z, sym[v])
                if nxt >= 0:
                    fail[v] = nxt
                    break
                steps += 1
                skipped += pop_len[z]
                z = fail[z]
            if fail[v] < 0:
                continue
            if skipped == 0:
                pop_off[v] = pop_off[u]
                pop_len[v] = pop_len[u]
                continue
            # A run of its own: u's pops, then those of the links passed, walked again.
            pool = grown(pool, size + pop_len[u] + skipped)
            pop_off[v] = size
            pop_len[v] = pop_len[u] + skipped
            for q in range(pop_len[u]):
                pool[size] = pool[pop_off[u] + q]
                size += 1
            z = fail[u]
            for _ in range(steps):
                for q in range(pop_len[z]):
                    pool[size] = pool[pop_off[z] + q]
                    size += 1
                z = fail[z]
    return fail, pop_off, pop_len, pool[:size].copy()


@njit(nogil=True, cache=True)
def _free_from(nxt, x):
    """Lowest free slot ``>= x``: ``nxt[s] == s`` iff slot ``s`` is free, a used slot points
    higher (path halving keeps the walks short)."""
    while nxt[x] != x:
        nxt[x] = nxt[nxt[x]]
        x = nxt[x]
    return x


@njit(nogil=True, cache=True)
def _grow(nxt, need):
    """``nxt`` covering slots ``0..need`` at least (new slots free)."""
    if need < len(nxt) - 1:
        return nxt
    out = np.arange(max(need + 1, 2 * len(nxt)), dtype=np.int64)
    out[:len(nxt)] = nxt
    return out


@njit(nogil=True, cache=True)
def _place(sym, child_off, child):
    """Double-array layout, nodes in their order: the children of a node in one block at
    ``base + symbol``, first fit over the free slots for the first child. Returns ``(slot,
    base, size)`` (``base`` 0 for leaves).

    A node with one child takes the lowest free slot at or above its symbol (one lookup), so
    such nodes, most of a trie, fill the holes. Nodes with ``k >= 2`` children search from
    where the last node of their size class (``k`` in ``(2^(j-1), 2^j]``) was placed, not from
    the bottom: the search of a class only moves up, so it passes each free slot once, and
    all searches together try O(size * log A) bases.
    """
    n = len(sym)
    slot = np.zeros(n, np.int64)
    base = np.zeros(n, np.int64)
    nxt = _grow(np.arange(2, dtype=np.int64), n + 2 * np.max(sym) + 2)
    nxt[0] = 1  # the root's slot
    start = np.zeros(64, np.int64)  # per size class: where its last search ended
    top = 0
    for u in range(n):
        lo, hi = child_off[u], child_off[u + 1]
        if lo == hi:
            continue
        s0, sk = np.int64(sym[child[lo]]), np.int64(sym[child[hi - 1]])
        j = 0
        while (1 << j) < hi - lo:
            j += 1
        f = _free_from(nxt, s0 if j == 0 else max(s0, start[j]))
        while True:
            b = f - s0
            nxt = _grow(nxt, b + sk + 1)
            fits = True
            for i in range(lo + 1, hi):
                s = b + sym[child[i]]
                if nxt[s] != s:
                    fits = False
                    break
            if fits:
                break
            f = _free_from(nxt, f + 1)
        start[j] = f
        base[u] = b
        top = max(top, b + sk)
        for i in range(lo, hi):
            s = b + sym[child[i]]
            nxt[s] = s + 1
            slot[child[i]] = s
    return slot, base, top + 1


def build_trie(tokens, suffix):
    """Trie arrays for ``tokens`` (a list whose index is the id; on duplicates the last id
    wins, as in HF) and the suffix indicator ``suffix`` (e.g. ``"##"``).

    Returns ``(da, info, pool, alphabet, suffix_root)``: ``alphabet`` is the sorted int32 code
    points of the symbols ``1..A``. The empty token and the token equal to ``suffix`` are not
    keys (a word equal to ``suffix`` is answered by a precomputed result instead).
    """
    keys = list(tokens)
    keys.append(suffix)
    offs = np.zeros(len(keys) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, keys), np.int64, len(keys)), out=offs[1:])
    cps = np.frombuffer("".join(keys).encode("utf-32-le", "surrogatepass"), np.uint32)
    to_sym = np.zeros(N_CODEPOINTS, np.int32)
    to_sym[cps] = 1
    alphabet = np.flatnonzero(to_sym).astype(np.int32)
    to_sym[alphabet] = np.arange(1, len(alphabet) + 1, dtype=np.int32)
    parent, sym, data, suffix_node = _insert(to_sym[cps], offs, len(alphabet))
    parent, sym, data, child_off, child = _bfs(parent, sym, data, len(alphabet), suffix_node)
    suffix_root = 1 if suffix_node else 0
    fail, pop_off, pop_len, pool = _failures(sym, data, child_off, child, suffix_root)
    slot, base, size = _place(sym, child_off, child)
    m = size + len(alphabet) + 1
    check = np.full(m, -1, np.int64)
    check[0] = -2
    check[slot[1:]] = slot[parent[1:]]
    base_of = np.zeros(m, np.int64)
    base_of[slot] = base
    info = np.zeros((m, 4), np.int32)
    info[:, FAIL] = -1
    info[:, TOKEN] = -1
    info[slot, FAIL] = np.where(fail >= 0, slot[fail], -1)
    info[slot, POP_OFF] = pop_off
    info[slot, POP_LEN] = pop_len
    info[slot, TOKEN] = data
    return (check << 32) | base_of, info, pool, alphabet, int(slot[suffix_root])


def two_level(full):
    """Split a per-code-point ``int32`` table into ``(stage1, stage2)`` with shared 256-entry
    blocks: ``full[cp] == stage2[(stage1[cp >> 8] << 8) | (cp & 255)]``."""
    rows = np.ascontiguousarray(full, np.int32).reshape(-1, 256)
    index = {}
    stage1 = np.empty(len(rows), np.int32)
    for k, row in enumerate(rows):
        stage1[k] = index.setdefault(row.tobytes(), len(index))
    firsts = sorted(index.values())
    keys = {v: k for k, v in index.items()}
    stage2 = np.frombuffer(b"".join(keys[v] for v in firsts), np.int32).copy()
    return stage1, stage2


def in_ranges(ranges):
    """Bool mask over all code points of ``int32 [k, 2]`` half-open ranges."""
    mask = np.zeros(N_CODEPOINTS, bool)
    for a, b in ranges:
        mask[a:b] = True
    return mask


def symbol_table(alphabet):
    """``int32`` table code point -> symbol id (0 = in no token)."""
    sym = np.zeros(N_CODEPOINTS, np.int32)
    sym[alphabet] = np.arange(1, len(alphabet) + 1, dtype=np.int32)
    return sym


def e2e_table(alphabet, ucd, clean_text, handle_chinese_chars, strip_accents, lowercase):
    """The fused normalization + pre-tokenization table for one option set.

    ``ucd``: HF behaviour per code point (from ``corpustok/data/bert_unicode.npz``): bool masks
    ``ws``, ``punct`` (BertPreTokenizer), ``chinese``, ``removed``, ``spaces`` (BertNormalizer)
    and ``maps[name]`` = {code point: normalized code points} for ``strip_lower``, ``strip``,
    ``lower``. Returns ``(full, exp_off, exp_pool, items_per_byte)``: the per-code-point values,
    the expansion runs, and the most items one input byte can produce (it sizes ``out``).
    HF normalizes in the order clean_text, CJK spacing, NFD + Mn removal, lowercase; the maps
    already compose the last two, and every step is per character.
    """
    sym = symbol_table(alphabet).astype(np.int64)
    ws, punct = ucd["ws"], ucd["punct"]
    full = np.where(ws, WS, np.where(punct, -((sym << 3) | KIND_ISOLATED), sym))
    if handle_chinese_chars:  # " c ": a one-character word, like punctuation
        full[ucd["chinese"]] = -((sym[ucd["chinese"]] << 3) | KIND_ISOLATED)
    name = {(True, True): "strip_lower", (True, False): "strip", (False, True): "lower"}.get(
        (bool(strip_accents), bool(lowercase)))
    mapping = ucd["maps"][name] if name else {}

    def classify(cp):
        if ws[cp]:
            return WS
        if punct[cp]:
            return isolated(int(sym[cp]))
        return int(sym[cp])

    exp_off = [0]
    exp_pool = []
    runs = {}
    items_per_byte = 1.0
    for cp, form in mapping.items():
        items = [classify(c) for c in form]
        if handle_chinese_chars and ucd["chinese"][cp]:
            items = [WS] + items + [WS]
        if len(items) == 3 and items[0] == WS == items[2] and items[1] != WS:
            full[cp] = items[1] if items[1] < 0 else isolated(items[1])
        elif not items:
            full[cp] = REMOVED
        elif len(items) == 1:
            full[cp] = items[0]
        else:
            key = tuple(items)
            if key not in runs:
                runs[key] = len(exp_off) - 1
                exp_pool.extend(items)
                exp_off.append(len(exp_pool))
            full[cp] = -((runs[key] << 3) | KIND_EXPAND)
            n_bytes = 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
            items_per_byte = max(items_per_byte, len(items) / n_bytes)
    if clean_text:
        full[ucd["removed"]] = REMOVED
        full[ucd["spaces"]] = WS
    full[0xD800:0xE000] = full[0xFFFD]  # never looked up: the decoder yields U+FFFD instead
    return (full.astype(np.int32), np.array(exp_off, np.int32), np.array(exp_pool, np.int32),
            items_per_byte)
