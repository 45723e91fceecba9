"""BPE training: HF-identical merge learning over counted chunks (counting is
:mod:`corpustok.kernels.bpe.chunk_count`).

Learning reproduces HF ``BpeTrainer`` (tokenizers/src/models/bpe/trainer.rs) step for step:
words are symbol-id arrays with counts; pair counts include overlapping windows; a lazy max-heap
holds ``(count, pair, word list)`` entries ordered by highest count, then smallest
``(left_id, right_id)``; a popped entry whose count is stale is pushed back with the current
count; a merge rewrites only the words of its entry's list and updates only the neighbouring
pairs (as HF's ``Word::merge``: the merged pair's own count stays stale); pairs that gained
occurrences are pushed with the words where they gained. A merged string that already exists
(same base-symbol sequence) keeps its id and the vocabulary does not grow.

The state is a few structures, each passed whole to the steps that need it:

- ``words``: ``(sym, info)``; word ``w`` is ``sym[info[w].start:][:info[w].len]`` (int32 ids,
  rewritten in place by merges), counted ``info[w].count`` times.
- ``table``: ``(slots, rows)``: :data:`PAIR` rows and an open-addressing index (under half
  full) from pair key to row.
- ``lists``: ``(pool, spans)``; word list ``l`` (HF's ``where_to_update`` of one heap entry)
  is ``pool[spans[l].start:][:spans[l].len]``.
- ``heap``: :data:`HEAP_ENTRY` records, a binary max-heap over its first ``size``.
- ``toks``: ``(seq, off, hashes, pows, slots)``: every token's base-symbol sequence with its
  polynomial hash, indexed by spelling (decides when a merged string already exists).
- ``scratch``: ``(changes, gains, touched)``: one merge's neighbour changes, the words they
  add to new lists, and the pairs that gained in first-gain order.

Steps that may grow a structure return it (Numba cannot resize in place); the loops live in
helpers compiled without NRT that never reassign an array, so nothing is refcounted in them.
"""
import numpy as np
from numba import njit

from corpustok.kernels.memory.buffers import grown
from corpustok.kernels.bpe.chunk_count import EMPTY, rehash

SEQ_BASE = np.uint64(0x9E3779B97F4A7C15)  # polynomial hash base for token symbol sequences

# A pair is keyed ``left << 32 | right``; ids stay below 2**31, so key order is (left, right)
# order. ``seen``: the last word that counted the pair in this step (dedups a list's words);
# ``gained``: its rank among the pairs that gained in this step, else EMPTY.
PAIR = np.dtype([("key", np.int64), ("hash", np.uint64), ("count", np.int64),
                 ("seen", np.int64), ("gained", np.int64)], align=True)
# HF's ``Merge {count, pair, pos}``: the pair as key and row, its words as a list index.
HEAP_ENTRY = np.dtype([("count", np.int64), ("key", np.int64), ("pair", np.int64),
                       ("list", np.int64)], align=True)
# A word's position, length and count side by side: a merge reads all three at random words.
WORD = np.dtype([("start", np.int64), ("len", np.int64), ("count", np.int64)], align=True)
SPAN = np.dtype([("start", np.int64), ("len", np.int64)], align=True)
# A neighbour change of one merge occurrence: pair ``old`` loses it in ``word``, ``new`` gains.
CHANGE = np.dtype([("old", np.int64), ("new", np.int64), ("word", np.int64)], align=True)
# Word ``word`` goes to new list ``list`` (counted from the step's first new list).
GAIN = np.dtype([("list", np.int64), ("word", np.int64)], align=True)
MERGE = np.dtype([("left", np.int64), ("right", np.int64), ("new", np.int64)], align=True)


@njit(nogil=True, cache=True, _nrt=False)
def _above(count, key, other_count, other_key):
    """Heap order: higher count first, then the smaller key (the smaller (left, right))."""
    return count > other_count or (count == other_count and key < other_key)


@njit(nogil=True, cache=True, _nrt=False)
def _put(heap, i, count, key, pair, lst):
    """``heap[i] = (count, key, pair, lst)`` (Numba cannot assign a tuple to a record)."""
    entry = heap[i]
    entry.count = count
    entry.key = key
    entry.pair = pair
    entry.list = lst


@njit(nogil=True, cache=True, _nrt=False)
def _move(heap, i, j):
    """``heap[i] = heap[j]`` field by field: in the sift loops Numba compiles a whole-record
    assignment to byte stores."""
    _put(heap, i, heap[j].count, heap[j].key, heap[j].pair, heap[j].list)


@njit(nogil=True, cache=True, _nrt=False)
def _sift_down(heap, size, i, count, key, pair, lst):
    """Put the entry ``(count, key, pair, lst)`` in the hole at ``i`` after lifting the better
    child while it is above the entry (the moves of swapping the entry down). O(log size)."""
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and _above(heap[c + 1].count, heap[c + 1].key, heap[c].count,
                                   heap[c].key):
            c += 1
        if not _above(heap[c].count, heap[c].key, count, key):
            break
        _move(heap, i, c)
        i = c
    _put(heap, i, count, key, pair, lst)


@njit(nogil=True, cache=True, _nrt=False)
def _push(heap, size, count, key, pair, lst):
    """Add an entry (room guaranteed by the caller), lowering the parents it goes above.
    Returns the new size. O(log size)."""
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if not _above(count, key, heap[parent].count, heap[parent].key):
            break
        _move(heap, i, parent)
        i = parent
    _put(heap, i, count, key, pair, lst)
    return size + 1


@njit(nogil=True, cache=True, _nrt=False)
def _pop_best(heap, size, rows, min_count):
    """Pop entries until one holds its pair's current count; a stale one goes back with the
    current count and the same list (HF). Returns ``(size, key, list)`` of that entry, the key
    EMPTY when the heap ran empty or the best count is below ``min_count``."""
    while size > 0:
        top = heap[0]
        count, key, p, lst = top.count, top.key, top.pair, top.list
        size -= 1
        if size > 0:
            last = heap[size]
            _sift_down(heap, size, np.int64(0), last.count, last.key, last.pair, last.list)
        current = rows[p].count
        if count == current:
            return size, key if count >= min_count else EMPTY, lst
        size = _push(heap, size, current, key, p, lst)
    return size, EMPTY, 0


@njit(nogil=True, cache=True)
def _initial_heap(rows, n):
    """One entry ``(count, pair p, list p)`` per pair with a positive count, heapified."""
    heap = np.empty(max(2 * n, 16), HEAP_ENTRY)
    size = np.int64(0)  # not a literal: _put would be compiled for it too
    for p in range(n):
        if rows[p].count > 0:
            _put(heap, size, rows[p].count, rows[p].key, p, p)
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, i, heap[i].count, heap[i].key, heap[i].pair, heap[i].list)
    return heap, size


@njit(nogil=True, cache=True, _nrt=False)
def _pair_hash(key):
    """O(1) splitmix64 finalizer: every bit of (left, right) reaches the low bits used as slot."""
    h = np.uint64(key)
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


@njit(nogil=True, cache=True, _nrt=False)
def _pair_index(table, n, key):
    """Row of pair ``key``, inserted as row ``n`` when new; returns ``(row, n')``. The caller
    guarantees room: ``len(rows) > n`` and the slots under half full after."""
    slots, rows = table
    h = _pair_hash(key)
    mask = len(slots) - 1
    s = np.int64(h & np.uint64(mask))
    while slots[s] != EMPTY:
        if rows[slots[s]].key == key:
            return slots[s], n
        s = (s + 1) & mask
    row = rows[n]
    row.key = key
    row.hash = h
    row.count = 0
    row.seen = EMPTY
    row.gained = EMPTY
    slots[s] = n
    return n, n + 1


@njit(nogil=True, cache=True)
def _pair_room(table, n, need):
    """``table`` (of ``n`` pairs) with rows for ``need`` and slots at most half as many as
    rows. Amortized O(1) per pair."""
    slots, rows = table
    rows = grown(rows, need)
    size = len(slots)
    while 2 * len(rows) > size:
        size *= 2
    if size > len(slots):
        slots = rehash(rows["hash"], n, size)
    return slots, rows


@njit(nogil=True, cache=True, _nrt=False)
def _count_pairs(words, table, n, w, inc, n_inc):
    """Initial pair counts from word ``w`` on, while the rows have room for the next word's
    pairs; records each (pair, word) once in ``inc``. Returns ``(next word, n, n_inc)``."""
    sym, info = words
    rows = table[1]
    while w < len(info):
        o = info[w].start
        if n + info[w].len > len(rows):
            break
        for i in range(info[w].len - 1):
            p, n = _pair_index(table, n, (np.int64(sym[o + i]) << 32) | sym[o + i + 1])
            rows[p].count += info[w].count
            if rows[p].seen != w:
                rows[p].seen = w
                inc[n_inc].list = p
                inc[n_inc].word = w
                n_inc += 1
        w += 1
    return w, n, n_inc


@njit(nogil=True, cache=True, _nrt=False)
def _add_lists(lists, first, n_new, pool_end, gains, n_gain):
    """Lay out lists ``first .. first + n_new - 1`` from ``pool_end``, each holding the words
    of its gains in gain order. Room is guaranteed by the caller. Returns the new pool end."""
    pool, spans = lists
    for l in range(first, first + n_new):
        spans[l].len = 0
    for k in range(n_gain):
        spans[first + gains[k].list].len += 1
    for l in range(first, first + n_new):
        spans[l].start = pool_end
        pool_end += spans[l].len
        spans[l].len = 0
    for k in range(n_gain):
        span = spans[first + gains[k].list]
        pool[span.start + span.len] = gains[k].word
        span.len += 1
    return pool_end


@njit(nogil=True, cache=True)
def _initial_state(words):
    """The pair table with the initial counts and the word lists, list ``p`` holding the words
    with pair ``p`` (HF's first ``where_to_update``). Returns ``(table, n, lists, pool end)``."""
    sym, info = words
    table = (np.full(1 << 13, EMPTY, np.int64), np.empty(1 << 12, PAIR))
    inc = np.empty(max(len(sym), 1), GAIN)
    # int64 zeros, not literals: Numba compiles a callee once more for each literal argument
    n = n_inc = w = np.int64(0)
    while True:
        w, n, n_inc = _count_pairs(words, table, n, w, inc, n_inc)
        if w == len(info):
            break
        table = _pair_room(table, n, n + info[w].len)
    lists = (np.empty(max(n_inc, 1), np.int64), np.empty(max(n, 1), SPAN))
    pool_end = _add_lists(lists, np.int64(0), n, np.int64(0), inc, n_inc)
    table[1]["seen"][:n] = EMPTY
    return table, n, lists, pool_end


@njit(nogil=True, cache=True, _nrt=False)
def _change(changes, n, old, new, word):
    """Record change ``n``; returns ``n + 1``."""
    entry = changes[n]
    entry.old = old
    entry.new = new
    entry.word = word
    return n + 1


@njit(nogil=True, cache=True, _nrt=False)
def _merge_words(words, pool, k, b, left, right, new, changes, n):
    """Rewrite the words ``pool[k:b]`` as HF's ``Word::merge`` (left to right, no overlap)
    while ``changes`` has room for a word's bound (one per symbol), recording the neighbour
    changes (prev, left) -> (prev, new) and (right, next) -> (new, next) from ``n`` on.
    Returns ``(next k, n)``."""
    sym, info = words
    while k < b:
        word = info[pool[k]]
        o = word.start
        L = word.len
        if n + L > len(changes):
            break
        r = 0
        out = 0
        while r < L:
            x = sym[o + r]
            if x != left or r + 1 >= L or sym[o + r + 1] != right:
                sym[o + out] = x
                r += 1
                out += 1
                continue
            if out > 0:
                prev = np.int64(sym[o + out - 1]) << 32
                n = _change(changes, n, prev | left, prev | new, pool[k])
            if r + 2 < L:
                nxt = np.int64(sym[o + r + 2])
                n = _change(changes, n, (right << 32) | nxt, (new << 32) | nxt, pool[k])
            sym[o + out] = new
            r += 2
            out += 1
        word.len = out
        k += 1
    return k, n


@njit(nogil=True, cache=True)
def _rewrite(words, lists, lst, left, right, new, scratch):
    """Merge ``(left, right)`` into ``new`` in the words of list ``lst``, growing the scratch
    when a word's changes might not fit. Returns ``(scratch, n changes)``."""
    pool, spans = lists
    k = spans[lst].start
    b = k + spans[lst].len
    n = np.int64(0)  # not a literal: _merge_words would be compiled for it too
    while True:
        k, n = _merge_words(words, pool, k, b, left, right, new, scratch[0], n)
        if k == b:
            return scratch, n
        need = n + words[1][pool[k]].len
        changes, gains, touched = scratch
        scratch = (grown(changes, need), grown(gains, need), grown(touched, need))


@njit(nogil=True, cache=True, _nrt=False)
def _apply_changes(words, table, n, scratch, n_ch):
    """Add the changes to the pair counts (the losing pair first, as HF). Pairs that gained go
    to ``touched`` in first-gain order (``gained`` = rank) and their words to ``gains``, once
    per word. Returns ``(n pairs, n touched, n gains)``."""
    info = words[1]
    rows = table[1]
    changes, gains, touched = scratch
    n_touched = 0
    n_gain = 0
    for k in range(n_ch):
        w = changes[k].word
        q, n = _pair_index(table, n, changes[k].old)
        rows[q].count -= info[w].count
        q, n = _pair_index(table, n, changes[k].new)
        row = rows[q]
        row.count += info[w].count
        if row.seen == w:
            continue
        row.seen = w
        if row.gained == EMPTY:
            row.gained = n_touched
            touched[n_touched] = q
            n_touched += 1
        gains[n_gain].list = row.gained
        gains[n_gain].word = w
        n_gain += 1
    return n, n_touched, n_gain


@njit(nogil=True, cache=True)
def _count_changes(words, table, n, scratch, n_ch):
    """Pair counts after a merge's ``n_ch`` changes (the table grown for up to two new pairs
    each). Returns ``(table, n pairs, n touched, n gains)``."""
    table = _pair_room(table, n, n + 2 * n_ch)
    n, n_touched, n_gain = _apply_changes(words, table, n, scratch, n_ch)
    return table, n, n_touched, n_gain


@njit(nogil=True, cache=True, _nrt=False)
def _push_touched(heap, size, rows, touched, n_touched, first):
    """Push ``(current count, list first + k)`` for each pair ``touched[k]`` still counted
    (HF pushes ``where_to_update`` with the current count) and clear the step marks.
    Returns the heap size."""
    for k in range(n_touched):
        q = touched[k]
        row = rows[q]
        row.seen = EMPTY
        row.gained = EMPTY
        if row.count > 0:
            size = _push(heap, size, row.count, row.key, q, first + k)
    return size


@njit(nogil=True, cache=True)
def _push_gains(heap, size, lists, n_lists, pool_end, rows, scratch, n_touched, n_gain):
    """One new word list and heap entry per pair that gained. Returns
    ``(heap, size, lists, n lists, pool end)``."""
    _, gains, touched = scratch
    pool, spans = lists
    lists = (grown(pool, pool_end + n_gain), grown(spans, n_lists + n_touched))
    pool_end = _add_lists(lists, n_lists, n_touched, pool_end, gains, n_gain)
    heap = grown(heap, size + n_touched)
    size = _push_touched(heap, size, rows, touched, n_touched, n_lists)
    return heap, size, lists, n_lists + n_touched, pool_end


@njit(nogil=True, cache=True)
def _token_table(tok_seq, tok_off):
    """``toks`` for the initial tokens (one with an empty sequence never matches a merge)."""
    n_tok = len(tok_off) - 1
    hashes = np.empty(n_tok, np.uint64)
    pows = np.empty(n_tok, np.uint64)
    for t in range(n_tok):
        h = np.uint64(0)
        pw = np.uint64(1)
        for i in range(tok_off[t], tok_off[t + 1]):
            h = h * SEQ_BASE + np.uint64(tok_seq[i] + 1)
            pw = pw * SEQ_BASE
        hashes[t] = h
        pows[t] = pw
    size = 1 << 12
    while 2 * n_tok > size:
        size *= 2
    return tok_seq.copy(), tok_off.copy(), hashes, pows, rehash(hashes, n_tok, size)


@njit(nogil=True, cache=True, _nrt=False)
def _find_token(toks, h, left, right):
    """Slot of the token spelling ``seq(left) + seq(right)`` (hash ``h``), or of the empty
    slot where it goes; returns ``(slot, token or EMPTY)``."""
    seq, off, hashes, _, slots = toks
    mask = len(slots) - 1
    la = off[left + 1] - off[left]
    lb = off[right + 1] - off[right]
    s = np.int64(h & np.uint64(mask))
    while slots[s] != EMPTY:
        t = slots[s]
        if hashes[t] == h and off[t + 1] - off[t] == la + lb:
            t0 = off[t]
            same = True
            for i in range(la):
                if seq[t0 + i] != seq[off[left] + i]:
                    same = False
            for i in range(lb):
                if seq[t0 + la + i] != seq[off[right] + i]:
                    same = False
            if same:
                return s, t
        s = (s + 1) & mask
    return s, EMPTY


@njit(nogil=True, cache=True)
def _merged_token(toks, n_tok, left, right):
    """The id of ``seq(left) + seq(right)``: an equal existing token's, else a new token
    ``n_tok`` appended. Returns ``(toks, n_tok', id)``."""
    seq, off, hashes, pows, slots = toks
    h = hashes[left] * pows[right] + hashes[right]
    s, t = _find_token(toks, h, left, right)
    if t != EMPTY:
        return toks, n_tok, t
    la = off[left + 1] - off[left]
    lb = off[right + 1] - off[right]
    off = grown(off, n_tok + 2)
    hashes = grown(hashes, n_tok + 1)
    pows = grown(pows, n_tok + 1)
    base = off[n_tok]
    seq = grown(seq, base + la + lb)
    seq[base:base + la] = seq[off[left]:off[left] + la]
    seq[base + la:base + la + lb] = seq[off[right]:off[right] + lb]
    off[n_tok + 1] = base + la + lb
    hashes[n_tok] = h
    pows[n_tok] = pows[left] * pows[right]
    slots[s] = n_tok
    if 2 * (n_tok + 1) > len(slots):
        slots = rehash(hashes, n_tok + 1, 2 * len(slots))
    return (seq, off, hashes, pows, slots), n_tok + 1, n_tok


@njit(nogil=True, cache=True)
def learn_merges(sym, word_off, word_count, tok_seq, tok_off, vocab_size, min_frequency):
    """Learn merges exactly as HF ``BpeTrainer``; one call.

    ``sym[word_off[w]:word_off[w+1]]`` (int64, below 2**31) are the token ids of unique word
    ``w`` (count ``word_count[w]``), in HF's id space (specials, then the alphabet by code
    point).
    ``tok_seq[tok_off[t]:tok_off[t+1]]`` is the base-symbol sequence of every initial token
    (empty for a special token that no symbol sequence spells); equal sequences are equal
    strings, which decides when a merged string already exists. Returns ``(merges, tok_seq,
    tok_off)``: the :data:`MERGE` records ``(left, right, new)`` in creation order and the
    token sequences with the created tokens appended. Cost: O(pair windows of the words) to
    start, then per merge O(symbols of the words in its list + pushes * log heap); never a
    recount.
    """
    info = np.empty(len(word_count), WORD)
    info["start"][:] = word_off[:-1]
    info["len"][:] = word_off[1:] - word_off[:-1]
    info["count"][:] = word_count
    words = (sym.astype(np.int32), info)
    toks = _token_table(tok_seq, tok_off)
    n_tok = len(tok_off) - 1
    table, n_pairs, lists, pool_end = _initial_state(words)
    n_lists = n_pairs
    heap, size = _initial_heap(table[1], n_pairs)
    scratch = (np.empty(1024, CHANGE), np.empty(1024, GAIN), np.empty(1024, np.int64))
    merges = np.empty(1024, MERGE)
    n_merges = 0
    while n_tok < vocab_size:
        size, key, lst = _pop_best(heap, size, table[1], max(1, min_frequency))
        if key == EMPTY:
            break
        left, right = key >> 32, key & 0xFFFFFFFF
        toks, n_tok, new = _merged_token(toks, n_tok, left, right)
        merges = grown(merges, n_merges + 1)
        merges[n_merges].left = left
        merges[n_merges].right = right
        merges[n_merges].new = new
        n_merges += 1
        scratch, n_ch = _rewrite(words, lists, lst, left, right, new, scratch)
        table, n_pairs, n_touched, n_gain = _count_changes(words, table, n_pairs, scratch, n_ch)
        heap, size, lists, n_lists, pool_end = _push_gains(
            heap, size, lists, n_lists, pool_end, table[1], scratch, n_touched, n_gain)
    seq, off = toks[0], toks[1]
    return merges[:n_merges].copy(), seq[:off[n_tok]].copy(), off[:n_tok + 1].copy()
