"""HF ``tokenizers``' Metaspace pre-tokenizer and Unigram model over a batch of normalized
segments (decision 0037). The readable reference is
:meth:`corpustok.sentencepiece.hf_unigram_reference.Reference.words`, ``.viterbi`` and
``.to_ids``; this kernel follows them step for step.

A segment is cut into pieces (``WhitespaceSplit``: the runs between White_Space characters;
else the whole segment), each piece copied into a scratch word with ``" "`` written as U+2581
and U+2581 put in front when the prepend scheme asks (``always``; ``first``: the piece that
begins its document) and it does not begin with one; with ``split`` every U+2581 then begins
a new word. Each word is one Viterbi from score 0 in float64: at every character start, each
token the trie finds there offers ``score + best[start]`` to its end, taken when it is the
first offer or strictly greater; without a one-character token there, the unknown id offers
``min score - 10`` for the character. The best path is read back; adjacent pieces of the
unknown id are fused and the fused string looked up again (its id when it is a token, else
its bytes' ``<0xXX>`` tokens with byte fallback when all exist, else the unknown id).
A word's ids depend on its bytes alone, so they are memoized in the caller's chunk cache
(:mod:`corpustok.kernels.bpe.cache`, as the BPE kernels' words: bounded, kept per thread
across batch calls, a pure memo) for words of up to ``CACHE_KEY`` bytes and ``CACHE_IDS``
ids: a word found there copies its ids instead of running the Viterbi again.

Time O(bytes x longest token); scratch O(longest segment).
"""
from collections import namedtuple

import numpy as np
from numba import njit

from corpustok.kernels.bpe.cache import CACHE_IDS, NO_PART, chunk_get, chunk_keep, chunk_key
from corpustok.kernels.memory.buffers import grown
from corpustok.kernels.sentencepiece.hf_normalize import is_white_space
from corpustok.kernels.unicode import char_at

LOW32 = 0xFFFFFFFF

HfUnigramModel = namedtuple("HfUnigramModel", [
    "nodes",         # int64: the double array of every token's UTF-8 (see .trie)
    "node_id",       # int32 per slot: the token ending there (the last id of its string), -1
    "scores",        # float64 per id: the score as HF reads it
    "byte_ids",      # int32 [256]: the id of <0xXX>, -1 when absent
    "settings",      # int64 [SETTINGS]
    "unk_score",     # float64 [1]: min score - 10
])

UNK, BYTE_FALLBACK, WHITESPACE_SPLIT, PREPEND, SPLIT, SETTINGS = range(6)
NEVER, ALWAYS, FIRST = 0, 1, 2


@njit(nogil=True, cache=True, _nrt=False)
def _exact(nodes, node_id, word, a, b):
    """Id of the token whose bytes are ``word[a:b]``, or -1."""
    s = 0
    nx = nodes[0]
    for i in range(a, b):
        t = (nx & LOW32) + np.int64(word[i]) + 1
        y = nodes[t]
        if (y >> 32) != s:
            return -1
        s = t
        nx = y
    return node_id[s] if b > a else -1


@njit(nogil=True, cache=True)
def _viterbi(word, n, model, score, start, ident, path, ids, m):
    """Append the ids of ``word[:n]`` to ``ids`` from ``m``; the new ``(ids, m)``."""
    nodes = model.nodes
    node_id = model.node_id
    scores = model.scores
    unk = model.settings[UNK]
    unk_score = model.unk_score[0]
    for k in range(n + 1):
        start[k] = -1
    score[0] = 0.0
    at = 0
    while at < n:
        here = score[at]
        _, mblen = char_at(word, at)
        single = False
        s = 0
        nx = nodes[0]
        i = at
        while i < n:
            t = (nx & LOW32) + np.int64(word[i]) + 1
            y = nodes[t]
            if (y >> 32) != s:
                break
            s = t
            nx = y
            i += 1
            tid = node_id[t]
            if tid >= 0:
                cand = scores[tid] + here
                if start[i] < 0 or cand > score[i]:
                    score[i] = cand
                    start[i] = at
                    ident[i] = tid
                if i - at == mblen:
                    single = True
        if not single:
            i = at + mblen
            cand = unk_score + here
            if start[i] < 0 or cand > score[i]:
                score[i] = cand
                start[i] = at
                ident[i] = unk
        at += mblen
    n_seg = 0
    end = n
    while end > 0:
        path[n_seg] = end
        n_seg += 1
        end = start[end]
    if len(ids) < m + n + 1:
        ids = grown(ids, m + n + 1)
    q = n_seg - 1
    a = 0
    while q >= 0:
        end = path[q]
        if ident[end] != unk:
            ids[m] = ident[end]
            m += 1
            a = end
            q -= 1
            continue
        while q >= 1 and ident[path[q - 1]] == unk:  # fuse the unknown run
            q -= 1
        end = path[q]
        q -= 1
        tid = _exact(nodes, node_id, word, a, end)
        if tid >= 0:
            ids[m] = tid
            m += 1
        else:
            ok = model.settings[BYTE_FALLBACK] != 0
            if ok:
                for k in range(a, end):
                    if model.byte_ids[word[k]] < 0:
                        ok = False
                        break
            if ok:
                for k in range(a, end):
                    ids[m] = model.byte_ids[word[k]]
                    m += 1
            else:
                ids[m] = unk
                m += 1
        a = end
    return ids, m


@njit(nogil=True, cache=True)
def hf_unigram_ids_room(offsets):
    """The ids :func:`hf_unigram_batch` first reserves for the segments of ``offsets``: one a
    byte, and a cache hit's slack (it grows past that where pieces are shorter, which the
    models' vocabularies make rare)."""
    return max(16, offsets[len(offsets) - 1] - offsets[0]) + CACHE_IDS


@njit(nogil=True, cache=True)
def hf_unigram_batch(data, offsets, at_start, model, cache, room):
    """``(ids int32, id_offsets int64 [n+1])`` of the normalized segments
    ``data[offsets[s]:offsets[s + 1]]``; ``at_start[s]``: segment ``s`` begins its document
    (for the ``first`` prepend scheme). ``cache``: a chunk cache of
    :func:`corpustok.kernels.bpe.cache.chunk_cache` (the model's ids below 2**21), read and
    filled: the words' memo. ``room``: an int32 array the ids are written into when it holds
    :func:`hf_unigram_ids_room` (a pool's memory, decision 0046), else (an empty one) a new
    array."""
    settings = model.settings
    ws_split = settings[WHITESPACE_SPLIT]
    prepend = settings[PREPEND]
    split = settings[SPLIT]
    n_seg = len(offsets) - 1
    longest = 0
    for s in range(n_seg):
        longest = max(longest, offsets[s + 1] - offsets[s])
    cap = 3 * longest + 4  # every byte a space written as U+2581, and one prepended
    word = np.empty(cap, np.uint8)
    score = np.empty(cap + 1, np.float64)
    start = np.empty(cap + 1, np.int64)
    ident = np.empty(cap + 1, np.int64)
    path = np.empty(cap + 1, np.int64)
    need = hf_unigram_ids_room(offsets)
    ids = room if len(room) >= need else np.empty(need, np.int32)
    id_offsets = np.empty(n_seg + 1, np.int64)
    id_offsets[0] = 0
    m = 0
    for s in range(n_seg):
        lo, hi = offsets[s], offsets[s + 1]
        i = lo
        while i < hi:
            # the next piece: [i, e)
            if ws_split:
                cp, n = char_at(data, i)
                if is_white_space(cp):
                    i += n
                    continue
                e = i
                while e < hi:
                    cp, n = char_at(data, e)
                    if is_white_space(cp):
                        break
                    e += n
            else:
                e = hi
            w = 0
            first_meta = data[i] == 0x20 or (i + 2 < hi and data[i] == 0xE2 and
                                             data[i + 1] == 0x96 and data[i + 2] == 0x81)
            if not first_meta and (prepend == ALWAYS or
                                   (prepend == FIRST and at_start[s] and i == lo)):
                word[0] = 0xE2
                word[1] = 0x96
                word[2] = 0x81
                w = 3
            for k in range(i, e):
                if data[k] == 0x20:
                    word[w] = 0xE2
                    word[w + 1] = 0x96
                    word[w + 2] = 0x81
                    w += 3
                else:
                    word[w] = data[k]
                    w += 1
            a = 0
            while a < w:  # each word: with split, up to the next U+2581
                b = w
                if split:
                    b = a + 1
                    while b < w and not (word[b] == 0xE2 and b + 2 < w and
                                         word[b + 1] == 0x96 and word[b + 2] == 0x81):
                        b += 1
                if len(ids) < m + CACHE_IDS:  # room for a hit's ids (and an entry's slack)
                    ids = grown(ids, m + CACHE_IDS)
                part, k1, k2, k3, k4, h = chunk_key(word, a, b)
                c = chunk_get(cache, word, a, b, part, h, k1, k2, k3, k4, ids, m)
                if c >= 0:  # seen before: its ids
                    m += c
                else:
                    m0 = m
                    ids, m = _viterbi(word[a:b], b - a, model, score, start, ident, path,
                                      ids, m)
                    if part != NO_PART:
                        chunk_keep(cache, word, a, b, h, k1, k2, k3, k4, ids, m0, m - m0)
                a = b
            i = e
        id_offsets[s + 1] = m
    return ids[:m], id_offsets
