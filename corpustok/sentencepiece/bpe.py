"""The tables of the SentencePiece BPE kernel (:mod:`corpustok.kernels.sentencepiece.bpe`),
built once per model from a :class:`~corpustok.sentencepiece.model_file.SentencePieceModel`,
and the batch encoder that runs it.

Symbols are piece ids; characters that are no piece but occur inside a mergeable piece get
ids past the vocabulary (Gemma's ``\\t``, inside user-defined pieces only), so that a pair of
symbols is always a pair of ids. The pair table holds every split of every mergeable piece
(NORMAL, USER_DEFINED, UNUSED) into two symbols, with the piece's *rank*: its score in
sentencepiece's order (float32 bit patterns compared as int32), dense, 0 the best.

Two checks decide how the kernel runs (see the kernel's docstring):

- ``cut_words``: no piece is UNUSED; then the text is cut into words where no merge can join
  two characters (:func:`cut_table`: no mergeable or user-defined piece holds their bytes side
  by side, or U+2581 after that character). True for Llama 2, Mistral v0.1/v0.3, Gemma 1/2
  and the json files, Gemma 3's included (its ``>▁</`` only keeps ``>`` and U+2581 together).
- ``kernel_normalizes``: the model has no precompiled charsmap (and, when spaces collapse, no
  user-defined piece holds a space). Else the readable reference normalizer runs in Python
  before the kernel (every BPE file we know is ``identity``; a charsmap kernel would replace
  this).
"""
import threading

import numpy as np

from corpustok.arrow import freeze_arrays, pool_array, read_only
from corpustok.gather import gather_ranges
from corpustok.kernels.bpe.cache import FAST_KEY, FAST_PER_SLOT, chunk_cache
from corpustok.kernels.sentencepiece.piece_splits import piece_splits
from corpustok.kernels.sentencepiece.bpe import (BYTE_FALLBACK, COLLAPSE, CUT_BEFORE_SPACE,
                                                 CUT_HERE, CUT_WORDS, DUMMY_PREFIX, ESCAPE, GRID,
                                                 HAS_UNUSED, ID_BITS, N_PIECES, NO_CUT,
                                                 RESEGMENT, SETTINGS, UNK, UNKNOWN, SpBpeModel,
                                                 encode_segments, fill_pairs, normalize_batch,
                                                 normalized_room, segment_ids_room)
from corpustok.sentencepiece.normalizer import normalize, normalizer_state
from corpustok.sentencepiece.model_file import NORMAL, SPACE, UNKNOWN as UNKNOWN_TYPE, UNUSED, \
    USER_DEFINED

__all__ = ["SentencePieceBpe", "cut_table"]

MAX_DOCUMENT = 1 << 29  # normalized bytes a document may have (the heap packs positions)
CACHE_SLOTS = 1 << 15  # general slots of a thread's word cache (33 MB, as BytePairTokenizer)


def cut_table(pieces):
    """The kernel's ``cut`` table (:class:`SpBpeModel`) of the mergeable ``pieces`` (str):
    where, between two characters of normalized text (valid UTF-8), a word may end. A merge
    makes a piece, so it can join the characters on both sides of a place only if some
    piece holds them side by side: a word may end between a character ending in byte b1 and
    one beginning with b2 when no piece holds the bytes b1 b2 side by side (``CUT_HERE``),
    or, before U+2581, when no piece holds U+2581 after a character (other than U+2581)
    ending in b1 (``CUT_BEFORE_SPACE``, checked by the kernel). Exact, so merging each word
    alone gives the ids of merging the whole text (UNUSED pieces aside: the caller turns
    cutting off for them). O(bytes of the pieces), vectorized."""
    raw = [p.encode() for p in pieces]
    data = np.frombuffer(b"".join(raw), np.uint8).astype(np.int64)
    ends = np.cumsum([len(r) for r in raw])
    inside = np.ones(max(len(data) - 1, 0), bool)  # pairs of bytes of the same piece
    inside[ends[:-1][ends[:-1] < len(data)] - 1] = False
    held = np.zeros(1 << 16, bool)
    held[(data[:-1] << 8 | data[1:])[inside]] = True
    before_space = np.zeros(256, bool)  # last bytes of characters U+2581 follows in a piece
    for p in pieces:
        k = p.find(SPACE, 1)
        while k > 0:
            if p[k - 1] != SPACE:
                before_space[p[k - 1].encode()[-1]] = True
            k = p.find(SPACE, k + 1)
    cut = np.where(held, NO_CUT, CUT_HERE).astype(np.uint8).reshape(256, 256)
    first = SPACE.encode()[0]
    cut[:, first] = np.where(~held.reshape(256, 256)[:, first], CUT_HERE,
                             np.where(before_space, NO_CUT, CUT_BEFORE_SPACE))
    cut[0xC0:, :] = NO_CUT  # no character ends in a first byte
    cut[:, 0x80:0xC0] = NO_CUT  # nor begins with a continuation byte
    return cut.ravel()


def _score_ranks(scores, mergeable):
    """Dense ranks of the mergeable pieces' scores in sentencepiece's order (the float32
    bits compared as int32: -0.0 below +0.0), 0 the highest; -1 for the others."""
    bits = np.asarray(scores, np.float32).view(np.int32).astype(np.int64)
    key = np.where(bits < 0, -(bits & 0x7FFFFFFF) - 1, bits)
    rank = np.full(len(key), -1, np.int64)
    _, inverse = np.unique(-key[mergeable], return_inverse=True)
    rank[mergeable] = inverse
    return rank


def _user_trie(user):
    """The byte trie of ``[(bytes, id)]`` as the kernel walks it: 4 int32 a node (first
    child, next sibling, byte, id of the piece ending there or -1), node 0 the root; and the
    bytes a piece starts with."""
    nodes = [[-1, -1, 0, -1]]
    first = np.zeros(256, np.uint8)
    for raw, i in user:
        first[raw[0]] = 1
        node = 0
        for b in raw:
            c = nodes[node][0]
            while c >= 0 and nodes[c][2] != b:
                c = nodes[c][1]
            if c < 0:
                c = len(nodes)
                nodes.append([-1, nodes[node][0], b, -1])
                nodes[node][0] = c
            node = c
        if nodes[node][3] < 0:
            nodes[node][3] = i
    return np.array(nodes, np.int32).ravel(), first


def _grid(sym, rank, merge_ids, left, right, merged, n_sym):
    """``(grid_of int16, grid int32)``: the dense grid of :data:`GRID` symbols, the ASCII
    characters and U+2581 first (a new word's first lookups), then the mergeable pieces
    ``merge_ids`` by ``rank`` (indexed by piece id), and the merge (``merged``, as in the pair
    table) of every pair of them."""
    chosen = [sym[c] for c in map(chr, range(128)) if c in sym]
    if SPACE in sym:
        chosen.append(sym[SPACE])
    seen = set(chosen)
    for i in merge_ids[np.argsort(rank[merge_ids], kind="stable")].tolist():
        if len(chosen) >= GRID:
            break
        if i not in seen:
            seen.add(i)
            chosen.append(i)
    grid_of = np.full(n_sym, -1, np.int16)
    grid_of[chosen] = np.arange(len(chosen), dtype=np.int16)
    grid = np.full(GRID * GRID, -1, np.int32)
    left, right, merged = (np.asarray(a, np.int64) for a in (left, right, merged))
    ga, gb = grid_of[left], grid_of[right]
    both = (ga >= 0) & (gb >= 0)
    grid[ga[both].astype(np.int64) * GRID + gb[both]] = merged[both]
    return grid_of, grid


def build_tables(model):
    """``(SpBpeModel, kernel_normalizes)`` of a BPE :class:`SentencePieceModel`."""
    pieces, types = model.pieces, model.types
    n = len(pieces)
    placeholder = np.array([p == "\x00" for p in pieces]) & (types == UNUSED)
    mergeable = ((types == NORMAL) | (types == USER_DEFINED) | (types == UNUSED)) & ~placeholder
    sym = {}
    for i, p in enumerate(pieces):
        if not placeholder[i]:
            sym.setdefault(p, i)
    merge_ids = np.flatnonzero(mergeable)
    chars = set("".join(pieces[i] for i in merge_ids))
    extra = sorted(c for c in chars if c not in sym)
    for k, c in enumerate(extra):
        sym[c] = n + k
    n_sym = n + len(extra)
    if n_sym >= 1 << ID_BITS:
        raise ValueError(f"a SentencePiece model of {n_sym} symbols (the kernel packs "
                         f"{ID_BITS} bits of an id)")
    char_sym = np.full(0x110000, -1, np.int32)
    for p, i in sym.items():
        if len(p) == 1:
            char_sym[ord(p)] = i
    out_id = np.full(n_sym, UNKNOWN, np.int32)
    normal = mergeable & (types != UNUSED)
    out_id[:n][normal] = np.flatnonzero(normal)
    out_id[:n][mergeable & (types == UNUSED)] = RESEGMENT
    sym_len = np.array([len(p.encode()) for p in pieces] + [len(c.encode()) for c in extra],
                       np.int32)
    rank = _score_ranks(model.scores, mergeable)
    left, right, merged = _splits(model, sym, n, extra, merge_ids)
    slots = 16
    while slots < 2 * len(left):
        slots *= 2
    pairs = np.full(slots, -1, np.int64)
    fill_pairs(pairs, np.array(left, np.int32), np.array(right, np.int32),
               np.array(merged, np.int32))
    merge_value = np.full(n, -1, np.int64)  # a merge is its merged piece, ranked by score
    merge_value[merge_ids] = rank[merge_ids] << ID_BITS | merge_ids
    grid_of, grid = _grid(sym, rank, merge_ids, left, right, merged, n_sym)
    unk = int(np.flatnonzero(types == UNKNOWN_TYPE)[0])
    byte_ids = np.array([sym.get(f"<0x{b:02X}>", unk) for b in range(256)], np.int32)
    user = [(pieces[i].encode(), i) for i in np.flatnonzero(types == USER_DEFINED)]
    trie, first = _user_trie(user)
    spec = model.normalizer
    unused = bool((mergeable & (types == UNUSED)).any())
    settings = np.zeros(SETTINGS, np.int64)
    settings[UNK] = unk
    settings[BYTE_FALLBACK] = bool(model.byte_fallback)
    settings[DUMMY_PREFIX] = bool(spec["add_dummy_prefix"])
    settings[COLLAPSE] = bool(spec["remove_extra_whitespaces"])
    settings[ESCAPE] = bool(spec["escape_whitespaces"])
    settings[CUT_WORDS] = not unused
    settings[HAS_UNUSED] = unused
    settings[N_PIECES] = n
    tables = SpBpeModel(char_sym=char_sym, pairs=pairs, merge_value=merge_value, grid_of=grid_of,
                        grid=grid, out_id=out_id, sym_len=sym_len,
                        byte_ids=byte_ids, user_trie=trie, user_first=first,
                        cut=cut_table([pieces[i] for i in merge_ids.tolist()]),
                        settings=settings)
    kernel_normalizes = model.charsmap_trie is None and not (
        spec["remove_extra_whitespaces"] and any(b" " in raw for raw, _ in user))
    return freeze_arrays(tables), kernel_normalizes


def _splits(model, sym, n, extra, merge_ids):
    """``(left, right, merged)``: every cut of each mergeable piece into two symbols
    (:func:`corpustok.kernels.sentencepiece.piece_splits.piece_splits`; ``sym``: symbol string
    -> id, the first of repeated pieces, then the ``extra`` characters from id ``n``). Its
    readable reference is :func:`splits_reference`."""
    first = np.zeros(n, bool)
    first[[i for i in sym.values() if i < n]] = True
    ids = np.flatnonzero(first)
    off = model.piece_off
    pieces, piece_off = gather_ranges(model.piece_bytes, off[ids], off[ids + 1] - off[ids])
    extra_bytes = [c.encode() for c in extra]
    key_off = np.concatenate([piece_off, piece_off[-1] + np.cumsum(
        [len(b) for b in extra_bytes], dtype=np.int64)])
    key_bytes = np.concatenate([pieces, np.frombuffer(b"".join(extra_bytes), np.uint8)])
    key_id = np.concatenate([ids, n + np.arange(len(extra))]).astype(np.int64)
    return piece_splits(key_bytes, key_off, key_id, model.piece_bytes, off,
                        merge_ids.astype(np.int64))


def splits_reference(pieces, sym, merge_ids):
    """What :func:`_splits` gives, a slice and a lookup each side of each cut."""
    left, right, merged = [], [], []
    for i in merge_ids.tolist():
        p = pieces[i]
        for k in range(1, len(p)):
            a, b = sym.get(p[:k]), sym.get(p[k:])
            if a is not None and b is not None:
                left.append(a)
                right.append(b)
                merged.append(i)
    return left, right, merged


class SentencePieceBpe:
    """The kernel encoder of a BPE model: :meth:`encode_arrays` of a batch."""

    def __init__(self, model):
        self.tables, self.kernel_normalizes = build_tables(model)
        self._model = model
        self._seed = None
        self._norm_state = None  # the full normalizer's state, when the kernel's is not enough
        self._local = threading.local()

    @property
    def cut_words(self):
        return bool(self.tables.settings[CUT_WORDS])

    def _cache(self):
        """This thread's word cache, seeded when made (:meth:`seed`)."""
        cache = getattr(self._local, "cache", None)
        if cache is None:
            cache = self._local.cache = chunk_cache(CACHE_SLOTS)
            if self.cut_words:
                text, offsets = self.seed()
                self._encode_normalized(text, offsets, cache)
        return cache

    def _encode_normalized(self, text, text_off, cache, added=None, doc_first=None):
        """:func:`encode_segments` of normalized text, one segment a document unless
        ``added`` and ``doc_first`` say otherwise. Every array goes in read-only, seeding
        included: each other signature would compile the whole kernel again (16-19 s more of
        a first run, bench/results/2026-12-06-compile-sp-bpe.txt)."""
        n = len(text_off) - 1
        if added is None:
            added, doc_first = np.full(n, -1, np.int32), np.arange(n + 1, dtype=np.int64)
        text_off = read_only(np.asarray(text_off, np.int64))
        # the ids' room from Arrow's pool (decision 0046)
        room = pool_array(segment_ids_room(text_off, len(added)))
        return encode_segments(read_only(text), text_off, read_only(np.asarray(added, np.int32)),
                               read_only(np.asarray(doc_first, np.int64)), self.tables, cache,
                               room)

    def seed(self):
        """The words a new cache is seeded with, as normalized documents ``(text, offsets)``:
        the NORMAL pieces of 2 to FAST_KEY bytes (the cache's fast part), the best-scored
        (lowest ids: sentencepiece orders pieces by score) last, so that the most frequent
        win the sets they share, as :mod:`corpustok.bpe.caches` seeds byte-level BPE. A
        word that is a whole piece then hits from its first sighting; the cache stays a memo
        (a seeded entry is what encoding that word gives). About 0.05 s (32K pieces)."""
        if self._seed is None:
            pieces, types = self._model.pieces, self._model.types
            words = [raw for raw in (pieces[i].encode() for i in np.flatnonzero(types == NORMAL))
                     if 2 <= len(raw) <= FAST_KEY][:FAST_PER_SLOT * CACHE_SLOTS][::-1]
            offsets = np.zeros(len(words) + 1, np.int64)
            np.cumsum([len(w) for w in words], out=offsets[1:])
            self._seed = read_only(np.frombuffer(b"".join(words), np.uint8)), offsets
        return self._seed

    def normalize(self, data, offsets):
        """``(text, offsets, replaced)``: the normalized documents of ``data``/``offsets``."""
        if self.kernel_normalizes:
            offsets = read_only(np.asarray(offsets, np.int64))
            return normalize_batch(read_only(data), offsets, self.tables.settings,
                                   pool_array(normalized_room(offsets), np.uint8))
        # A charsmap, or user-defined pieces with spaces: sentencepiece's whole normalizer,
        # the same for BPE and Unigram models (kernels/sentencepiece/normalize.py).
        if self._norm_state is None:
            self._norm_state = normalizer_state(self._model)
        return normalize(self._norm_state, data, offsets)  # read-only there

    def encode_arrays(self, data, offsets):
        """``(ids int32, offsets int64 [n+1], replaced int64 [n])`` of the documents
        ``data[offsets[d]:offsets[d + 1]]`` (UTF-8, invalid bytes replaced and counted).
        Memory: the normalized text (at most 3 bytes an input byte), an int32 an id, and for
        a word (or a document, without ``cut_words``) longer than 256 bytes, work arrays of
        about 75 bytes per byte of it (a 1 MB document without a space: 75 MB)."""
        n = len(offsets) - 1
        return self.encode_segments(data, offsets, np.full(n, -1, np.int32),
                                    np.arange(n + 1, dtype=np.int64))

    def encode_segments(self, data, cuts, added, doc_first):
        """``(ids int32, offsets int64 [n+1], replaced int64 [n])`` of documents of segments
        (the shape :func:`~corpustok.kernels.sentencepiece.added.cut_added` writes): segment
        ``s`` is the text ``data[cuts[s]:cuts[s + 1]]``, normalized and encoded alone, or,
        when ``added[s] >= 0``, that id; document ``d`` is segments ``doc_first[d]`` to
        ``doc_first[d + 1] - 1``. One kernel call writes every document's ids, the added
        ids in place (no per-segment join). ``replaced``: invalid bytes per document."""
        text, text_off, replaced = self.normalize(data, cuts)
        if len(text_off) > 1 and np.diff(text_off).max() >= MAX_DOCUMENT:
            raise ValueError("a document of 512 MB or more (normalized): the SentencePiece BPE "
                             "kernel packs a symbol's position in 29 bits")
        doc_first = np.asarray(doc_first, np.int64)
        ids, out_off = self._encode_normalized(text, text_off, self._cache(), added, doc_first)
        n = len(doc_first) - 1
        per_doc = np.add.reduceat(replaced, doc_first[:-1]) if len(replaced) else \
            np.zeros(n, np.int64)
        per_doc[doc_first[:-1] == doc_first[1:]] = 0  # a document of no segment
        return ids, out_off, per_doc
