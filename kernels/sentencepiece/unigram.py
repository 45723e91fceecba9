"""SentencePiece Unigram: the Viterbi of ``unigram_model.cc`` (``EncodeOptimized``, 0.2.3)
over a batch of normalized documents (the output of :mod:`.normalize`).

The readable reference is :func:`corpustok.sentencepiece.reference.unigram_segments` and
:func:`~corpustok.sentencepiece.reference.segments_to_ids`; this kernel follows them step for
step. At each character boundary ``at`` (a character is the length its lead byte announces,
sentencepiece's ``OneCharLen``), every piece that begins there is found by walking a
:mod:`.trie` of the NORMAL and USER_DEFINED pieces; a piece ending at ``end`` offers
``score[end] = piece score + score[at]`` in float32, kept when it is the first offer or
strictly greater (ties keep the earlier start). A user-defined piece scores ``0.1 * (bytes -
1)`` (already in ``scores``, see :class:`UnigramState`); when no one-character piece begins
at ``at``, the unknown id offers ``min score - 10`` for that character. When the score reaching
``at`` passes +-100,000 it is subtracted from every score from ``at`` to the farthest end
reached so far (``kScoreResetThreshold``), so float32 rounds as sentencepiece's does on long
documents. The best path is read back from the end; an unknown segment becomes its
``<0xXX>`` byte pieces with byte fallback, else one unknown id per run of unknown segments.

The whole document is one Viterbi: no per-word cache (float32 rounding depends on the running
score, so words encoded apart can differ; decision 0035). Time O(bytes x longest piece);
scratch O(longest document).
"""
from collections import namedtuple

import numpy as np
from numba import njit

LOW32 = 0xFFFFFFFF
SCORE_RESET = np.float32(100000.0)  # what UnigramState.reset holds

UnigramState = namedtuple("UnigramState", [
    "nodes",         # int64 [2 * slots]: the double array of the NORMAL and USER_DEFINED
                     # pieces (see .trie), interleaved: nodes[2t] = check << 32 | base,
                     # nodes[2t + 1] = piece id << 32 | the bits of its float32 Viterbi score
                     # (piece id -1: no piece ends at t), so a step reads one cache line
    "node_scores",   # float32 view of nodes: the score of slot t is node_scores[4t + 2]
    "byte_ids",      # int32 [256]: the <0xXX> piece of each byte (byte fallback), else unk
    "unk_id",        # int64
    "unk_score",     # float32 [1]: min NORMAL score - 10
    "byte_fallback",  # int64 0/1
    "reset",         # float32 [1]: the rebase threshold, 100,000 (kScoreResetThreshold)
])

_LEAD_LEN = np.array([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4], np.int64)


@njit(nogil=True, cache=True)
def unigram_ids_room(offsets):
    """The ids :func:`unigram_batch` reserves for the documents of ``offsets``: one a byte (a
    piece holds one byte at least)."""
    return offsets[len(offsets) - 1] - offsets[0]


@njit(nogil=True, cache=True)
def unigram_batch(data, offsets, state, room):
    """``(ids int32, id_offsets int64 [n+1])`` of the normalized documents
    ``data[offsets[d]:offsets[d + 1]]``, written into ``room`` when it holds
    :func:`unigram_ids_room` (a pool's memory, decision 0046), else into a new array."""
    nodes = state.nodes
    node_scores = state.node_scores
    byte_ids = state.byte_ids
    unk_id = state.unk_id
    unk_score = state.unk_score[0]
    byte_fallback = state.byte_fallback
    reset = state.reset[0]
    lead_len = _LEAD_LEN
    n_docs = len(offsets) - 1
    longest = 0
    for d in range(n_docs):
        longest = max(longest, offsets[d + 1] - offsets[d])
    score = np.zeros(longest + 1, np.float32)
    link = np.empty(longest + 1, np.int64)  # start << 32 | id of the best piece ending here
    path = np.empty(longest + 1, np.int64)
    need = unigram_ids_room(offsets)
    ids = room if len(room) >= need else np.empty(need, np.int32)
    id_offsets = np.empty(n_docs + 1, np.int64)
    id_offsets[0] = 0
    m = 0
    zero = np.float32(0.0)
    unreached = np.float32(-np.inf)  # below any offer: the first offer is always kept
    for d in range(n_docs):
        base = offsets[d]
        size = offsets[d + 1] - base
        for k in range(size + 1):
            score[k] = unreached  # (reached: a finite score)
        score[0] = zero
        at = 0
        frontier = 0
        while at < size:
            here = score[at]
            if here < -reset or here > reset:
                for k in range(at, frontier + 1):
                    if k == at or score[k] != unreached:
                        score[k] = score[k] - here
                here = zero
            mblen = min(lead_len[np.int64(data[base + at]) >> 4], size - at)
            single = False
            s = 0
            nx = nodes[0]
            i = at
            while i < size:
                t = (nx & LOW32) + np.int64(data[base + i]) + 1
                y = nodes[2 * t]
                if (y >> 32) != s:
                    break
                s = t
                nx = y
                i += 1
                w = nodes[2 * t + 1]
                if w >= 0:  # a piece ends here
                    if i > frontier:
                        frontier = i
                    cand = node_scores[4 * t + 2] + here
                    if cand > score[i]:  # (unreached: -inf) ties keep the earlier start
                        score[i] = cand
                        link[i] = (at << 32) | (w >> 32)
                    if i - at == mblen:
                        single = True
            if not single:
                i = at + mblen
                if i > frontier:
                    frontier = i
                cand = unk_score + here
                if cand > score[i]:
                    score[i] = cand
                    link[i] = (at << 32) | unk_id
            at += mblen
        # the best path, read back from the end, then written forward
        n_seg = 0
        end = size
        while end > 0:
            path[n_seg] = end
            n_seg += 1
            end = link[end] >> 32
        prev_unk = False
        for q in range(n_seg - 1, -1, -1):
            end = path[q]
            start = link[end] >> 32
            p = link[end] & LOW32
            unk = p == unk_id
            if unk and byte_fallback:
                for k in range(base + start, base + end):
                    ids[m] = byte_ids[data[k]]
                    m += 1
            elif not (unk and prev_unk):
                ids[m] = p
                m += 1
            prev_unk = unk
        id_offsets[d + 1] = m
    return ids[:m], id_offsets
