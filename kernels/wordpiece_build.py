"""Builders for the Fast WordPiece kernels: run once per vocabulary and option set.

Plain Python and numpy (no I/O, no jit): the trie with failure links and compact failure pops,
laid out as a double array over symbols, and the per-code-point E2E table that fuses BERT
normalization and pre-tokenization. See ``kernels/wordpiece.py`` for the array layout.
"""
from collections import deque

import numpy as np

from .wordpiece import (FAIL, KIND_EXPAND, KIND_ISOLATED, KIND_REMOVED, KIND_WS,
                        POP_LEN, POP_OFF, TOKEN)

N_CODEPOINTS = 0x110000
WS = -KIND_WS
REMOVED = -KIND_REMOVED


def isolated(sym):
    """Table value of a one-character word with symbol ``sym``."""
    return -((sym << 3) | KIND_ISOLATED)


def _failure_structure(children, data, root, suffix_root):
    """Failure links and pops (TF Text's BFS, Aho-Corasick style).

    ``children[u]``: dict symbol -> node; ``data[u]``: token id or -1. A node whose string is a
    token pops that token and fails to the suffix root; any other node fails like its parent
    followed by the same symbol, collecting the pops of the links skipped on the way. A node
    whose pops equal its parent's shares the parent's run of the pool.
    """
    n = len(children)
    fail = np.full(n, -1, np.int64)
    pop_off = np.zeros(n, np.int64)
    pop_len = np.zeros(n, np.int64)
    pool = []
    seeds = [root] if suffix_root == root else [root, suffix_root]
    queue = deque(seeds)
    while queue:
        u = queue.popleft()
        for c in sorted(children[u]):
            v = children[u][c]
            if v == suffix_root:
                continue
            queue.append(v)
            if data[v] >= 0:
                fail[v] = suffix_root
                pop_off[v] = len(pool)
                pop_len[v] = 1
                pool.append(data[v])
                continue
            z = fail[u]
            extra = []
            while z >= 0:
                nxt = children[z].get(c)
                if nxt is not None:
                    fail[v] = nxt
                    break
                extra.extend(pool[pop_off[z]:pop_off[z] + pop_len[z]])
                z = fail[z]
            if fail[v] < 0:
                continue
            if not extra:
                pop_off[v], pop_len[v] = pop_off[u], pop_len[u]
            else:
                pop_off[v] = len(pool)
                pool.extend(pool[pop_off[u]:pop_off[u] + pop_len[u]])
                pool.extend(extra)
                pop_len[v] = len(pool) - pop_off[v]
    return fail, pop_off, pop_len, np.array(pool, np.int32)


def _double_array(children, order):
    """Slot of every node and base of every slot: first fit, children in one block."""
    n = len(children)
    slot = np.full(n, -1, np.int64)
    slot[order[0]] = 0
    used = np.zeros(1024, bool)
    used[0] = True
    base = {}
    first_free = 1
    for u in order:
        if not children[u]:
            continue
        syms = np.array(sorted(children[u]), np.int64)
        while used[first_free]:
            first_free += 1
        lo = max(first_free, syms[0])
        width = 64
        while True:  # candidates: free slots for the first child, a growing window at a time
            hi = lo + width
            width *= 4
            if hi + syms[-1] + 1 >= len(used):
                used = np.concatenate([used, np.zeros(len(used) + hi + syms[-1] + 1, bool)])
            cand = np.flatnonzero(~used[lo:hi]) + lo - syms[0]
            ok = ~used[cand[:, None] + syms[None, :]].any(axis=1)
            if ok.any():
                b = int(cand[np.argmax(ok)])
                break
            lo = hi
        used[b + syms] = True
        base[u] = b
        for c, s in zip(syms.tolist(), (b + syms).tolist()):
            slot[children[u][c]] = s
    return slot, base, int(np.flatnonzero(used)[-1]) + 1


def build_trie(tokens, suffix):
    """Trie arrays for ``tokens`` (a list whose index is the id; on duplicates the last id
    wins, as in HF) and the suffix indicator ``suffix`` (e.g. ``"##"``).

    Returns ``(da, info, pool, alphabet, suffix_root)``: ``alphabet`` is the sorted int32 code
    points of the symbols ``1..A``. The empty token and the token equal to ``suffix`` are not
    keys (a word equal to ``suffix`` is answered by a precomputed result instead).
    """
    ids = {}
    for i, tok in enumerate(tokens):
        ids[tok] = i
    alphabet = sorted({ord(ch) for tok in ids for ch in tok} | {ord(ch) for ch in suffix})
    sym = {cp: k + 1 for k, cp in enumerate(alphabet)}
    children = [{}]
    data = [-1]

    def path(s):
        u = 0
        for ch in s:
            c = sym[ord(ch)]
            v = children[u].get(c)
            if v is None:
                v = len(children)
                children.append({})
                data.append(-1)
                children[u][c] = v
            u = v
        return u

    suffix_root = path(suffix)
    for tok, i in ids.items():
        if tok and tok != suffix:
            data[path(tok)] = i
    fail, pop_off, pop_len, pool = _failure_structure(children, data, 0, suffix_root)
    order = [0]
    queue = deque([0])
    while queue:
        u = queue.popleft()
        for c in sorted(children[u]):
            order.append(children[u][c])
            queue.append(children[u][c])
    slot, base, size = _double_array(children, order)
    m = size + len(alphabet) + 1
    base_of = np.zeros(m, np.int64)
    check = np.full(m, -1, np.int64)
    check[0] = -2
    info = np.zeros((m, 4), np.int32)
    info[:, FAIL] = -1
    info[:, TOKEN] = -1
    for u in range(len(children)):
        s = slot[u]
        base_of[s] = base.get(u, 0)
        info[s, FAIL] = slot[fail[u]] if fail[u] >= 0 else -1
        info[s, POP_OFF] = pop_off[u]
        info[s, POP_LEN] = pop_len[u]
        info[s, TOKEN] = data[u]
        for v in children[u].values():
            check[slot[v]] = s
    da = (check << 32) | base_of
    return da, info, pool, np.array(alphabet, np.int32), int(slot[suffix_root])


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
