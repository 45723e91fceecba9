"""Added tokens of an HF ``tokenizer.json`` cut out of raw text, as HF's added vocabulary does
(Aho-Corasick, leftmost-longest): at the first position where an added token begins, the
longest one there; then on after it. Tokens are matched on UTF-8 bytes (a token's first byte
is ASCII or a lead byte, so in valid text it matches at character starts only), through the
byte trie of :func:`corpustok.kernels.sentencepiece.bpe._user_match`.
"""
import numpy as np
from numba import njit

from corpustok.kernels.sentencepiece.bpe import _user_match


@njit(nogil=True, cache=True)
def cut_added(data, offsets, trie, first):
    """Cut every document ``data[offsets[d]:offsets[d + 1]]`` at its added tokens:
    ``(cuts int64, added int32, doc_first int64 [n+1])``. Segment ``s`` is
    ``data[cuts[s]:cuts[s + 1]]``, its token id in ``added[s]`` (-1: text between tokens);
    document ``d`` is the segments ``doc_first[d]`` to ``doc_first[d + 1] - 1``, at least one
    (an empty document: one empty text segment). ``trie``/``first``: the tokens' byte trie and
    the bytes they begin with. O(bytes x the longest token) at worst; memory: two entries a
    segment."""
    n = len(offsets) - 1
    cap = 2 * n + 2
    cuts = np.empty(cap, np.int64)
    added = np.empty(cap, np.int32)
    doc_first = np.empty(n + 1, np.int64)
    k = 0
    for d in range(n):
        s, e = offsets[d], offsets[d + 1]
        doc_first[d] = k
        at = s
        i = s
        while i < e:
            if first[data[i]]:
                size, tid = _user_match(trie, data, i, e)
                if size:
                    if k + 2 > len(cuts):
                        cuts = _grow64(cuts, k)
                        added = _grow32(added, k)
                    if i > at:
                        cuts[k] = at
                        added[k] = -1
                        k += 1
                    cuts[k] = i
                    added[k] = tid
                    k += 1
                    i += size
                    at = i
                    continue
            i += 1
        if at < e or at == s:
            if k + 1 > len(cuts):
                cuts = _grow64(cuts, k)
                added = _grow32(added, k)
            cuts[k] = at
            added[k] = -1
            k += 1
    doc_first[n] = k
    if k + 1 > len(cuts):
        cuts = _grow64(cuts, k)
    cuts[k] = offsets[n]
    return cuts[:k + 1], added[:k], doc_first


@njit(nogil=True, cache=True)
def _grow64(a, k):
    b = np.empty(2 * len(a) + 2, np.int64)
    b[:k] = a[:k]
    return b


@njit(nogil=True, cache=True)
def _grow32(a, k):
    b = np.empty(2 * len(a) + 2, np.int32)
    b[:k] = a[:k]
    return b
