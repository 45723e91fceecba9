"""BPE training: HF-identical merge learning over counted chunks (counting is
:mod:`corpustok.kernels.chunk_count`).

Learning reproduces HF ``BpeTrainer`` (tokenizers/src/models/bpe/trainer.rs) step for step:
words are symbol-id arrays with counts; pair counts include overlapping windows; a lazy max-heap
holds ``(count, pair, word list)`` entries ordered by highest count, then smallest
``(left_id, right_id)``; a popped entry whose count is stale is pushed back with the current
count; a merge rewrites only the words of its entry's list and updates only the neighbouring
pairs (as HF's ``Word::merge``: the merged pair's own count stays stale); pairs that gained
occurrences are pushed with the words where they gained. A merged string that already exists
(same base-symbol sequence) keeps its id and the vocabulary does not grow.
"""
import numpy as np
from numba import njit

from corpustok.kernels.buffers import grown
from corpustok.kernels.chunk_count import EMPTY, rehash

SEQ_BASE = np.uint64(0x9E3779B97F4A7C15)  # polynomial hash base for token symbol sequences


@njit(nogil=True, cache=True, _nrt=False)
def _heap_above(hcount, hleft, hright, x, y):
    """Heap order of entries x, y: higher count first, then the smaller (left, right)."""
    if hcount[x] != hcount[y]:
        return hcount[x] > hcount[y]
    if hleft[x] != hleft[y]:
        return hleft[x] < hleft[y]
    return hright[x] < hright[y]


@njit(nogil=True, cache=True, _nrt=False)
def _heap_swap(x, y, hcount, hleft, hright, hpair, hlist):
    """Swap heap entries x and y (the heap is five parallel arrays). O(1)."""
    hcount[x], hcount[y] = hcount[y], hcount[x]
    hleft[x], hleft[y] = hleft[y], hleft[x]
    hright[x], hright[y] = hright[y], hright[x]
    hpair[x], hpair[y] = hpair[y], hpair[x]
    hlist[x], hlist[y] = hlist[y], hlist[x]


@njit(nogil=True, cache=True, _nrt=False)
def _sift_up(i, hcount, hleft, hright, hpair, hlist):
    """Binary max-heap sift up. O(log size)."""
    while i > 0:
        parent = (i - 1) >> 1
        if not _heap_above(hcount, hleft, hright, i, parent):
            break
        _heap_swap(i, parent, hcount, hleft, hright, hpair, hlist)
        i = parent


@njit(nogil=True, cache=True, _nrt=False)
def _sift_down(i, size, hcount, hleft, hright, hpair, hlist):
    """Binary max-heap sift down. O(log size)."""
    while True:
        best = i
        child = 2 * i + 1
        if child < size and _heap_above(hcount, hleft, hright, child, best):
            best = child
        if child + 1 < size and _heap_above(hcount, hleft, hright, child + 1, best):
            best = child + 1
        if best == i:
            return
        _heap_swap(i, best, hcount, hleft, hright, hpair, hlist)
        i = best


@njit(nogil=True, cache=True, _nrt=False)
def _pair_hash(key):
    """O(1) splitmix64 finalizer: every bit of (left, right) reaches the low bits used as slot."""
    h = np.uint64(key)
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


@njit(nogil=True, cache=True, _nrt=False)
def _pair_slot(pslots, pkey, key, h):
    """Slot of pair ``key`` in the pair table, or of the empty slot where it would go."""
    mask = len(pslots) - 1
    s = np.int64(h & np.uint64(mask))
    while pslots[s] != EMPTY and pkey[pslots[s]] != key:
        s = (s + 1) & mask
    return s


@njit(nogil=True, cache=True, _nrt=False)
def _pair_index(key, n, pslots, pkey, phash, pcount, seen, gained):
    """Index of pair ``key``, inserted as index ``n`` when new; returns ``(index, n')``.
    The caller guarantees room: ``len(pkey) > n`` and ``pslots`` under half full after."""
    h = _pair_hash(key)
    s = _pair_slot(pslots, pkey, key, h)
    p = pslots[s]
    if p != EMPTY:
        return p, n
    pkey[n] = key
    phash[n] = h
    pcount[n] = 0
    seen[n] = EMPTY
    gained[n] = EMPTY
    pslots[s] = n
    return n, n + 1


@njit(nogil=True, cache=True, _nrt=False)
def _count_pairs(sym, word_off, word_count, w, n, room, pslots, pkey, phash, pcount, seen,
                 gained, inc_pair, inc_word, n_inc):
    """Initial pair counts from word ``w`` on, until fewer than ``room`` new pairs could
    still fit; records (pair, word) once per word. Returns ``(next word, n, n_inc)``."""
    n_words = len(word_off) - 1
    while w < n_words:
        o = word_off[w]
        L = word_off[w + 1] - o
        if n + L > room:
            break
        for i in range(L - 1):
            p, n = _pair_index((sym[o + i] << 32) | sym[o + i + 1], n, pslots, pkey, phash,
                               pcount, seen, gained)
            pcount[p] += word_count[w]
            if seen[p] != w:
                seen[p] = w
                inc_pair[n_inc] = p
                inc_word[n_inc] = w
                n_inc += 1
        w += 1
    return w, n, n_inc


@njit(nogil=True, cache=True, _nrt=False)
def _list_symbols(pool, a, b, wlen):
    """Symbols in the words ``pool[a:b]`` (bounds the changes one merge can make)."""
    total = 0
    for k in range(a, b):
        total += wlen[pool[k]]
    return total


@njit(nogil=True, cache=True, _nrt=False)
def _merge_words(pool, a, b, sym, word_off, wlen, left, right, new, ch_key, ch_sign, ch_word):
    """Rewrite the words ``pool[a:b]`` as HF's ``Word::merge`` (left to right, no overlap)
    and record the neighbour changes (prev, left) -1, (prev, new) +1, (right, next) -1,
    (new, next) +1. Returns the number of changes (at most 2 per symbol)."""
    n = 0
    for k in range(a, b):
        w = pool[k]
        o = word_off[w]
        L = wlen[w]
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
                prev = sym[o + out - 1] << 32
                ch_key[n] = prev | left
                ch_sign[n] = -1
                ch_word[n] = w
                ch_key[n + 1] = prev | new
                ch_sign[n + 1] = 1
                ch_word[n + 1] = w
                n += 2
            if r + 2 < L:
                nxt = sym[o + r + 2]
                ch_key[n] = (right << 32) | nxt
                ch_sign[n] = -1
                ch_word[n] = w
                ch_key[n + 1] = (new << 32) | nxt
                ch_sign[n + 1] = 1
                ch_word[n + 1] = w
                n += 2
            sym[o + out] = new
            r += 2
            out += 1
        wlen[w] = out
    return n


@njit(nogil=True, cache=True, _nrt=False)
def _apply_changes(n_ch, ch_key, ch_sign, ch_word, word_count, n, pslots, pkey, phash,
                   pcount, seen, gained, touched, tcount):
    """Add the changes to the pair counts. Pairs that gained are listed in ``touched`` in
    first-gain order with their number of distinct words in ``tcount``; ``ch_key[g]`` and
    ``ch_word[g]`` are overwritten with the gains (pair index, word), deduplicated per word.
    Returns ``(n pairs, n touched, n gains)``."""
    n_touched = 0
    n_gain = 0
    for k in range(n_ch):
        w = ch_word[k]
        q, n = _pair_index(ch_key[k], n, pslots, pkey, phash, pcount, seen, gained)
        pcount[q] += ch_sign[k] * word_count[w]
        if ch_sign[k] < 0 or seen[q] == w:
            continue
        seen[q] = w
        if gained[q] == EMPTY:
            gained[q] = n_touched
            touched[n_touched] = q
            tcount[n_touched] = 0
            n_touched += 1
        tcount[gained[q]] += 1
        ch_key[n_gain] = q
        ch_word[n_gain] = w
        n_gain += 1
    return n, n_touched, n_gain


@njit(nogil=True, cache=True, _nrt=False)
def _push_gains(n_touched, touched, tcount, n_gain, gain_pair, gain_word, pool, pool_end,
                lstart, llen, n_lists, pcount, pkey, seen, gained, size, hcount, hleft,
                hright, hpair, hlist):
    """One new word list and heap entry per pair that gained (HF pushes ``where_to_update``
    with the current count). Returns ``(pool end, heap size)``."""
    for k in range(n_touched):
        lstart[n_lists + k] = pool_end
        llen[n_lists + k] = 0
        pool_end += tcount[k]
    for k in range(n_gain):
        l = n_lists + gained[gain_pair[k]]
        pool[lstart[l] + llen[l]] = gain_word[k]
        llen[l] += 1
    for k in range(n_touched):
        q = touched[k]
        seen[q] = EMPTY
        gained[q] = EMPTY
        if pcount[q] > 0:
            hcount[size] = pcount[q]
            hleft[size] = pkey[q] >> 32
            hright[size] = pkey[q] & 0xFFFFFFFF
            hpair[size] = q
            hlist[size] = n_lists + k
            size += 1
            _sift_up(size - 1, hcount, hleft, hright, hpair, hlist)
    return pool_end, size


@njit(nogil=True, cache=True, _nrt=False)
def _find_token(h, left, right, tok_slots, tok_hash, tok_off, tok_seq):
    """Slot of the token spelling ``seq(left) + seq(right)`` (hash ``h``), or of the empty
    slot where it goes; returns ``(slot, token or EMPTY)``."""
    mask = len(tok_slots) - 1
    la = tok_off[left + 1] - tok_off[left]
    lb = tok_off[right + 1] - tok_off[right]
    s = np.int64(h & np.uint64(mask))
    while tok_slots[s] != EMPTY:
        t = tok_slots[s]
        if tok_hash[t] == h and tok_off[t + 1] - tok_off[t] == la + lb:
            t0 = tok_off[t]
            same = True
            for i in range(la):
                if tok_seq[t0 + i] != tok_seq[tok_off[left] + i]:
                    same = False
            for i in range(lb):
                if tok_seq[t0 + la + i] != tok_seq[tok_off[right] + i]:
                    same = False
            if same:
                return s, t
        s = (s + 1) & mask
    return s, EMPTY


@njit(nogil=True, cache=True)
def learn_merges(sym, word_off, word_count, tok_seq, tok_off, vocab_size, min_frequency):
    """Learn merges exactly as HF ``BpeTrainer``; one call.

    ``sym[word_off[w]:word_off[w+1]]`` (int64) are the token ids of unique word ``w`` (count
    ``word_count[w]``), already in HF's id space (specials, then the alphabet by code point).
    ``tok_seq[tok_off[t]:tok_off[t+1]]`` is the base-symbol sequence of every initial token
    (empty for a special token that no symbol sequence spells); equal sequences are equal
    strings, which decides when a merged string already exists. Returns ``(left, right, new,
    tok_seq, tok_off)``: the merges in creation order and the token sequences with the created
    tokens appended. Cost: O(pair windows of the words) to start, then per merge
    O(symbols of the words in its list + pushes * log heap); never a recount. The loops live
    in small helpers compiled without NRT: this large function reassigns its arrays when they
    grow, which makes Numba refcount them in every loop that lives here.
    """
    sym = sym.copy()
    wlen = word_off[1:] - word_off[:-1]
    # Token sequences and their hash table (for "merged string already exists").
    n_tok = len(tok_off) - 1
    tok_off = tok_off.copy()
    tok_seq = tok_seq.copy()
    tok_hash = np.empty(n_tok, np.uint64)
    tok_pow = np.empty(n_tok, np.uint64)
    for t in range(n_tok):
        h = np.uint64(0)
        pw = np.uint64(1)
        for i in range(tok_off[t], tok_off[t + 1]):
            h = h * SEQ_BASE + np.uint64(tok_seq[i] + 1)
            pw = pw * SEQ_BASE
        tok_hash[t] = h
        tok_pow[t] = pw
    tsize = 1 << 12
    while 2 * n_tok > tsize:
        tsize *= 2
    tok_slots = np.full(tsize, EMPTY, np.int64)
    for t in range(n_tok):
        if tok_off[t + 1] > tok_off[t]:
            s = np.int64(tok_hash[t] & np.uint64(tsize - 1))
            while tok_slots[s] != EMPTY:
                s = (s + 1) & (tsize - 1)
            tok_slots[s] = t

    # Pair table: key (left << 32 | right) -> pair index p with its count; seen[p] dedups the
    # words of a list, gained[p] is p's rank among the pairs that gained in the current step.
    n_pairs = 0
    cap = 1 << 12
    pslots = np.full(2 * cap, EMPTY, np.int64)
    pkey = np.empty(cap, np.int64)
    phash = np.empty(cap, np.uint64)
    pcount = np.empty(cap, np.int64)
    seen = np.empty(cap, np.int64)
    gained = np.empty(cap, np.int64)

    # Initial pair counts and, per pair, the words holding it (HF's where_to_update).
    inc_pair = np.empty(max(len(sym), 1), np.int64)
    inc_word = np.empty(max(len(sym), 1), np.int64)
    n_inc = 0
    w = 0
    while w < len(word_off) - 1:
        w, n_pairs, n_inc = _count_pairs(sym, word_off, word_count, w, n_pairs, len(pkey),
                                         pslots, pkey, phash, pcount, seen, gained,
                                         inc_pair, inc_word, n_inc)
        if w < len(word_off) - 1:  # grow for the next word
            need = n_pairs + word_off[w + 1] - word_off[w]
            pkey = grown(pkey, need)
            phash = grown(phash, need)
            pcount = grown(pcount, need)
            seen = grown(seen, need)
            gained = grown(gained, need)
            size_slots = len(pslots)
            while 2 * len(pkey) > size_slots:
                size_slots *= 2
            if size_slots > len(pslots):
                pslots = rehash(phash, n_pairs, size_slots)
    # Word lists: list l is pool[lstart[l]:lstart[l] + llen[l]]; list p belongs to pair p.
    llen = np.zeros(max(n_pairs, 1), np.int64)
    for k in range(n_inc):
        llen[inc_pair[k]] += 1
    lstart = np.empty(len(llen), np.int64)
    acc = 0
    for p in range(n_pairs):
        lstart[p] = acc
        acc += llen[p]
    pool = np.empty(max(acc, 1), np.int64)
    pool_end = acc
    fill = lstart.copy()
    for k in range(n_inc):
        p = inc_pair[k]
        pool[fill[p]] = inc_word[k]
        fill[p] += 1
        seen[p] = EMPTY
    n_lists = n_pairs
    inc_pair = inc_word = fill = np.empty(0, np.int64)  # free the scratch before merging

    # The heap of (count, left, right, pair, list) entries.
    hcap = max(2 * n_pairs, 16)
    hcount = np.empty(hcap, np.int64)
    hleft = np.empty(hcap, np.int64)
    hright = np.empty(hcap, np.int64)
    hpair = np.empty(hcap, np.int64)
    hlist = np.empty(hcap, np.int64)
    size = 0
    for p in range(n_pairs):
        if pcount[p] > 0:
            hcount[size] = pcount[p]
            hleft[size] = pkey[p] >> 32
            hright[size] = pkey[p] & 0xFFFFFFFF
            hpair[size] = p
            hlist[size] = p
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(i, size, hcount, hleft, hright, hpair, hlist)

    m_left = np.empty(1024, np.int64)
    m_right = np.empty(1024, np.int64)
    m_new = np.empty(1024, np.int64)
    n_merges = 0
    ch_key = np.empty(1024, np.int64)
    ch_sign = np.empty(1024, np.int64)
    ch_word = np.empty(1024, np.int64)
    touched = np.empty(1024, np.int64)
    tcount = np.empty(1024, np.int64)
    while n_tok < vocab_size and size > 0:
        count = hcount[0]
        p = hpair[0]
        left = hleft[0]
        right = hright[0]
        lst = hlist[0]
        size -= 1
        if size > 0:
            _heap_swap(0, size, hcount, hleft, hright, hpair, hlist)
            _sift_down(0, size, hcount, hleft, hright, hpair, hlist)
        if count != pcount[p]:  # stale: push back with the current count, same word list
            hcount[size] = pcount[p]
            hleft[size] = left
            hright[size] = right
            hpair[size] = p
            hlist[size] = lst
            size += 1
            _sift_up(size - 1, hcount, hleft, hright, hpair, hlist)
            continue
        if count < 1 or count < min_frequency:
            break
        # The merged token: the id of an equal existing sequence, else the next id.
        h = tok_hash[left] * tok_pow[right] + tok_hash[right]
        s, new = _find_token(h, left, right, tok_slots, tok_hash, tok_off, tok_seq)
        if new == EMPTY:
            new = n_tok
            la = tok_off[left + 1] - tok_off[left]
            lb = tok_off[right + 1] - tok_off[right]
            tok_off = grown(tok_off, n_tok + 2)
            tok_hash = grown(tok_hash, n_tok + 1)
            tok_pow = grown(tok_pow, n_tok + 1)
            base = tok_off[n_tok]
            tok_seq = grown(tok_seq, base + la + lb)
            tok_seq[base:base + la] = tok_seq[tok_off[left]:tok_off[left] + la]
            tok_seq[base + la:base + la + lb] = tok_seq[tok_off[right]:tok_off[right] + lb]
            tok_off[n_tok + 1] = base + la + lb
            tok_hash[n_tok] = h
            tok_pow[n_tok] = tok_pow[left] * tok_pow[right]
            tok_slots[s] = n_tok
            n_tok += 1
            if 2 * n_tok > len(tok_slots):
                tok_slots = rehash(tok_hash, n_tok, 2 * len(tok_slots))
        if n_merges == len(m_left):
            m_left = grown(m_left, n_merges + 1)
            m_right = grown(m_right, n_merges + 1)
            m_new = grown(m_new, n_merges + 1)
        m_left[n_merges] = left
        m_right[n_merges] = right
        m_new[n_merges] = new
        n_merges += 1

        # Rewrite the words of this entry's list, then apply the neighbour changes.
        a = lstart[lst]
        b = a + llen[lst]
        bound = 2 * _list_symbols(pool, a, b, wlen)
        if bound > len(ch_key):
            ch_key = grown(ch_key, bound)
            ch_sign = grown(ch_sign, bound)
            ch_word = grown(ch_word, bound)
            touched = grown(touched, bound)
            tcount = grown(tcount, bound)
        n_ch = _merge_words(pool, a, b, sym, word_off, wlen, left, right, new, ch_key,
                            ch_sign, ch_word)
        need = n_pairs + n_ch
        if need > len(pkey):
            pkey = grown(pkey, need)
            phash = grown(phash, need)
            pcount = grown(pcount, need)
            seen = grown(seen, need)
            gained = grown(gained, need)
        if 2 * need > len(pslots):
            size_slots = len(pslots)
            while 2 * need > size_slots:
                size_slots *= 2
            pslots = rehash(phash, n_pairs, size_slots)
        n_pairs, n_touched, n_gain = _apply_changes(
            n_ch, ch_key, ch_sign, ch_word, word_count, n_pairs, pslots, pkey, phash, pcount,
            seen, gained, touched, tcount)
        lstart = grown(lstart, n_lists + n_touched)
        llen = grown(llen, n_lists + n_touched)
        pool = grown(pool, pool_end + n_gain)
        if size + n_touched > len(hcount):
            hcount = grown(hcount, size + n_touched)
            hleft = grown(hleft, size + n_touched)
            hright = grown(hright, size + n_touched)
            hpair = grown(hpair, size + n_touched)
            hlist = grown(hlist, size + n_touched)
        pool_end, size = _push_gains(n_touched, touched, tcount, n_gain, ch_key, ch_word, pool,
                                     pool_end, lstart, llen, n_lists, pcount, pkey, seen,
                                     gained, size, hcount, hleft, hright, hpair, hlist)
        n_lists += n_touched
    return (m_left[:n_merges].copy(), m_right[:n_merges].copy(), m_new[:n_merges].copy(),
            tok_seq[:tok_off[n_tok]].copy(), tok_off[:n_tok + 1].copy())
