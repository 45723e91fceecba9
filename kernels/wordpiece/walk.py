"""Fast WordPiece kernels: LinMaxMatch over a double-array trie with failure links and pops.

The trie is over *symbols*: dense ids ``1..A`` of the characters that occur in the vocabulary
(0 = a character no token contains, so any word holding it is ``[UNK]``). A transition is
``t = base[node] + sym`` accepted iff ``check[t] == node``: O(1). The pair is packed in one
``int64`` per slot, ``da[slot] = check << 32 | base``, so a step is one load (the walk keeps the
current node's word in a register); the cold data is ``int32 info[slot] = (fail, pop_off,
pop_len, token)``:

* ``fail``: failure link (-1 = none) and ``pool[pop_off : pop_off + pop_len]`` the token ids
  emitted when it is followed (the "failure pops"); ``token`` is the node's own id or -1.
* ``params = (suffix_root, unk_id, max_chars)``; ``suffix_only`` holds the precomputed ids of a
  word that equals the suffix indicator (the only word the trie cannot answer by itself).

The E2E kernel fuses HF BERT normalization and pre-tokenization into the walk: each input code
point maps, through a two-level table ``(stage1[cp >> 8] << 8) | (cp & 255)`` (plus a direct
128-entry ASCII table), to one ``int32`` value ``v``:

* ``v >= 0``: a word character whose normalized form is the single symbol ``v``;
* ``v < 0``: ``-v = payload << 3 | kind`` with kind ``WS`` (word boundary), ``REMOVED``
  (deleted by the normalizer), ``ISOLATED`` (punctuation or a spaced CJK ideograph: a
  one-character word, payload = symbol) or ``EXPAND`` (payload = index of a run in
  ``exp_pool`` whose items are values of the three other kinds).

Single-word LinMaxMatch (HF's bare ``WordPiece`` model, no normalization or pre-tokenization) is
the same kernel run with the identity table (every code point -> its symbol, no boundaries), so
each document is one word. The kernels are linear in their input and never raise on text;
invalid UTF-8 decodes to U+FFFD as CPython does.
"""
from collections import namedtuple

import numpy as np
from numba import njit

from corpustok.kernels.unicode import utf8_step

KIND_WS = 1
KIND_REMOVED = 2
KIND_ISOLATED = 3
KIND_EXPAND = 4
KIND_SPECIAL = 5  # internal: a special token matched in the raw text
KIND_END = 6  # internal: end of a document

LOW32 = 0xFFFFFFFF  # base = da[slot] & LOW32 (bases are >= 0), check = da[slot] >> 32
FAIL, POP_OFF, POP_LEN, TOKEN = range(4)
ST_NODE, ST_WORD_LEN, ST_DEAD, ST_WORD_START = range(4)
STATE_SIZE = 4

# What e2e_run reads, in three named tuples (fields as in the module docstring): the
# code point -> value table, the trie with its failure links and pops, the special tokens
# matched in raw text (``off`` of length 1: none).
NormTable = namedtuple("NormTable", "ascii_tab stage1 stage2 exp_off exp_pool")
Trie = namedtuple("Trie", "da info pool params suffix_only")
Specials = namedtuple("Specials", "first off bytes ids")


@njit(nogil=True, cache=True)
def e2e_run(data, offsets, stop, close, norm, trie, specials, out, n_out, out_offsets, replaced,
            state):
    """E2E WordPiece over documents ``data[offsets[d]:offsets[d+1]]`` (UTF-8, raw text).

    Document ``d``'s ids go to ``out[out_offsets[d]:out_offsets[d+1]]`` (writing starts at
    ``n_out``), its U+FFFD replacements to ``replaced[d]``. ``out`` must hold the worst case
    (see ``WordPiece``). Returns ``(n_out, i)``.

    Streaming: the walk starts from ``state`` (int64 ``[node, word_len, dead, word_start]``)
    and, in the last document, only characters starting before ``stop`` are read (bytes up to
    the document end are only looked at to match special tokens); with ``close == 0`` the word
    open there stays open in ``state`` (its provisional ids are ``out[word_start:n_out]``) and
    ``i`` says where reading stopped. The batch call passes ``stop = offsets[-1]``, ``close = 1``.

    ``norm``, ``trie`` and ``specials`` are a :data:`NormTable`, a :data:`Trie` and a
    :data:`Specials`. Special tokens (none = off) are matched leftmost-longest on the raw bytes before
    normalization, as HF matches added tokens. Everything is inline (no calls that pass arrays
    in the loop, which would cost reference counting per word). Time: O(bytes) (times the
    special-token set where one may start): a symbol either deepens the trie walk or follows a
    failure link that emits at least one token. No allocation.
    """
    ascii_tab, stage1, stage2, exp_off, exp_pool = norm
    da, info, pool, params, suffix_only = trie
    sp_first, sp_off, sp_bytes, sp_ids = specials
    suffix_root = params[0]
    unk = params[1]
    max_chars = params[2]
    n_docs = len(offsets) - 1
    specials = len(sp_off) > 1
    node = state[ST_NODE]
    nx = da[node]
    word_len = state[ST_WORD_LEN]
    dead = state[ST_DEAD]
    word_start = state[ST_WORD_START]
    i = offsets[0]
    out_offsets[0] = n_out
    for d in range(n_docs):
        i = offsets[d]
        end = offsets[d + 1]
        doc_stop = min(stop, end) if d == n_docs - 1 else end
        if d > 0:
            word_len = 0
        r = 0
        ep = 0
        ep_end = 0
        while True:
            if ep < ep_end:
                v = np.int64(exp_pool[ep])
                ep += 1
            elif i < doc_stop:
                b = np.int64(data[np.uint64(i)])
                k = -1
                if specials and sp_first[b]:
                    best_len = 0
                    for s in range(len(sp_off) - 1):
                        a = sp_off[s]
                        n = sp_off[s + 1] - a
                        if n > best_len and i + n <= end:
                            j = 0
                            while j < n and data[i + j] == sp_bytes[a + j]:
                                j += 1
                            if j == n:
                                k = s
                                best_len = n
                if k >= 0:
                    v = -((k << 3) | KIND_SPECIAL)
                    i += sp_off[k + 1] - sp_off[k]
                elif b < 0x80:
                    v = np.int64(ascii_tab[np.uint64(b)])
                    i += 1
                else:
                    cp, nb, bad = utf8_step(data, i, end)
                    i += nb
                    r += bad
                    v = np.int64(stage2[(np.int64(stage1[cp >> 8]) << 8) | (cp & 0xFF)])
            elif d == n_docs - 1 and close == 0:
                break
            else:
                v = -KIND_END
            if v >= 0:
                if word_len == 0:
                    node = 0
                    nx = da[0]
                    dead = 0
                    word_start = n_out
                while True:  # the rest of the word while it stays ASCII: no dispatch per char
                    word_len += 1
                    if dead == 0:
                        t = (nx & LOW32) + v
                        y = da[np.uint64(t)]
                        if (y >> 32) == node and word_len <= max_chars:
                            node = t
                            nx = y
                        elif word_len > max_chars or v == 0:
                            dead = 1
                        else:
                            # Failure links: emit their pops until a step fits. Written out
                            # here and at the word's end rather than in a helper: no call per
                            # step in the hot loop (decision 0017).
                            while True:
                                f = info[node, FAIL]
                                if f < 0:
                                    dead = 1
                                    break
                                off = info[node, POP_OFF]
                                for q in range(info[node, POP_LEN]):
                                    out[n_out] = pool[off + q]
                                    n_out += 1
                                node = f
                                t = (da[node] & LOW32) + v
                                y = da[t]
                                if (y >> 32) == node:
                                    node = t
                                    nx = y
                                    break
                        if dead != 0:
                            n_out = word_start
                    if ep < ep_end or i >= doc_stop:
                        break
                    b = np.int64(data[np.uint64(i)])
                    if b >= 0x80 or (specials and sp_first[np.uint64(b)]):
                        break
                    v = np.int64(ascii_tab[np.uint64(b)])
                    if v < 0:
                        break
                    i += 1
                continue
            kind = (-v) & 7
            payload = (-v) >> 3
            if kind == KIND_REMOVED:
                continue
            if kind == KIND_EXPAND:
                ep = exp_off[payload]
                ep_end = exp_off[payload + 1]
                continue
            if word_len > 0:  # close the word: flush the pops left on the trie path
                if dead == 0:
                    if node == suffix_root and n_out == word_start:
                        for q in range(len(suffix_only)):
                            out[n_out] = suffix_only[q]
                            n_out += 1
                    while node != suffix_root:
                        f = info[node, FAIL]
                        if f < 0:
                            dead = 1
                            break
                        off = info[node, POP_OFF]
                        for q in range(info[node, POP_LEN]):
                            out[n_out] = pool[off + q]
                            n_out += 1
                        node = f
                if dead != 0:  # unknown or too long: one [UNK] for the whole word
                    out[word_start] = unk
                    n_out = word_start + 1
                word_len = 0
            if kind == KIND_ISOLATED:  # punctuation or spaced CJK: a one-character word
                t = (da[0] & LOW32) + payload
                if max_chars >= 1 and payload != 0 and (da[t] >> 32) == 0:
                    if t == suffix_root:
                        for q in range(len(suffix_only)):
                            out[n_out] = suffix_only[q]
                            n_out += 1
                    elif info[t, TOKEN] >= 0:
                        out[n_out] = info[t, TOKEN]
                        n_out += 1
                    else:
                        out[n_out] = unk
                        n_out += 1
                else:
                    out[n_out] = unk
                    n_out += 1
            elif kind == KIND_SPECIAL:
                out[n_out] = sp_ids[payload]
                n_out += 1
            elif kind == KIND_END:
                break
        out_offsets[d + 1] = n_out
        replaced[d] = r
    state[ST_NODE] = node
    state[ST_WORD_LEN] = word_len
    state[ST_DEAD] = dead
    state[ST_WORD_START] = word_start
    return n_out, i


@njit(nogil=True, cache=True)
def gather_pieces(ids, offsets, first_off, first_bytes, next_off, next_bytes, out_offsets):
    """Decode: concatenate per-token UTF-8 pieces, ``first_*`` for a document's first id and
    ``next_*`` for the others (WordPiece decoder: prefix stripped or a space prepended).
    Writes ``out_offsets`` (n + 1) and returns the bytes. Two passes, O(ids + output bytes)."""
    n_docs = len(offsets) - 1
    out_offsets[0] = 0
    total = 0
    for d in range(n_docs):
        for k in range(offsets[d], offsets[d + 1]):
            t = ids[k]
            if k == offsets[d]:
                total += first_off[t + 1] - first_off[t]
            else:
                total += next_off[t + 1] - next_off[t]
        out_offsets[d + 1] = total
    buf = np.empty(total, np.uint8)
    j = 0
    for d in range(n_docs):
        for k in range(offsets[d], offsets[d + 1]):
            t = ids[k]
            if k == offsets[d]:
                for q in range(first_off[t], first_off[t + 1]):
                    buf[j] = first_bytes[q]
                    j += 1
            else:
                for q in range(next_off[t], next_off[t + 1]):
                    buf[j] = next_bytes[q]
                    j += 1
    return buf
