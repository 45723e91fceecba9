"""Byte-level BPE encoding: rank-based merging, a bounded chunk cache, one call per batch.

A model is a :data:`BpeModel` ``(substrate, split, sym_id, pairs, whole, pre)`` built once per
vocabulary:
``split`` is the pre-tokenizer's program (:mod:`corpustok.kernels.split.interpreter`), ``whole`` the token
table ``(slots, tok_sym, tok_off)`` of :mod:`corpustok.kernels.bpe.token_table` when a chunk that is
itself a token is emitted whole (tiktoken's rule, HF's ``ignore_merges``), holding only the
tokens merging does not reach (``unmergeable``; empty ``slots`` when there are none, as in
every rank file we know, or without the rule), ``sym_id`` maps the 512 base symbols (see
:mod:`corpustok.kernels.substrate`) to token ids (-1 when the vocabulary lacks the
symbol; such symbols are skipped, as HF's BPE model without an unknown token skips them), and
``pairs`` is the open-addressing pair table of :func:`corpustok.kernels.bpe.merge.build_pair_table`
and ``pre`` its pre-merge table (:mod:`corpustok.kernels.bpe.premerge`: a new chunk's merges
that provably come first, in one pass before the merge loop).
Merging applies the lowest-rank pair first, the leftmost on ties, which is exactly HF's
``Word::merge_all`` and GPT-2's ``bpe()``.

Chunks (pre-tokenizer pieces) are looked up first in the bounded chunk cache of
:mod:`corpustok.kernels.bpe.cache` (a pure memo: results never depend on its state).

:func:`encode_docs` loops over documents and the segments between special tokens; the steps
below it are small allocation-free functions (``_nrt=False``: no reference counting per call)
over these named tuples and the work arrays (:data:`EncodeWork`):
:func:`_next_special`, :func:`_encode_run` (the chunk loop, with the streaming rule) and
:func:`_encode_chunk` (cache, then :mod:`corpustok.kernels.bpe.chunk`'s merge). Only chunks
too long for the work arrays go back to the caller, for :func:`encode_long_chunk`, which
allocates.
"""
from collections import namedtuple

import numpy as np
from numba import njit

from corpustok.kernels.bpe.cache import (CACHE_IDS, CACHE_KEY, FAST_IDS, FAST_KEY, FAST_WORDS,
                                         IN_GENERAL, IN_WIDE, WIDE_IDS, WIDE_KEY, WIDE_WORDS,
                                         cache_find, cache_get, cache_put, general_hash,
                                         general_prefetch, general_put, line_get, line_key,
                                         line_put, line_set, same_bytes, wide_key)
from corpustok.kernels.bpe.chunk import LONG, WORK, chunk_merger, encode_long_chunk, merge_chunk
from corpustok.kernels.bpe.merge import long_work
from corpustok.kernels.memory.hugepages import advise_huge_pages
from corpustok.kernels.memory.prefetch import prefetch
from corpustok.kernels.split.fast import split_some
from corpustok.kernels.substrate import count_symbols, most_symbols
from corpustok.kernels.unicode import HIGH_BITS

BLOCK = 128  # chunks split before they are encoded
AHEAD = 32  # chunks between the prefetch of an inline cache set and its lookup
KEY_WORDS = 6  # a chunk split ahead: its key (4 words; a fast key: 2, then its wide set
# and whether to fetch that too), then its set's first word << 3 | GENERAL_HINT | part, then
# its hash in the general part (line_key's up to WIDE_KEY bytes, general_hash's beyond)
FAST_PART, WIDE_PART = 1, 2  # the inline part a chunk's key is for (0: neither)
NOT_CACHED = -(1 << 62)  # cache_find's answer for a chunk too long for the general cache
GENERAL_HINT = 4  # the chunk's ids may be in the general part: fetch its first slot too

# A vocabulary's arrays, built once (see the module docstring).
BpeModel = namedtuple("BpeModel", "substrate split sym_id pairs whole pre")
# encode_docs' work arrays, made once per call: a short chunk's symbols and ranks
# (merge_short), a block's chunk ends and keys, merge_long's arrays, each chunk's document.
EncodeWork = namedtuple("EncodeWork", "ids rank ends keys long doc_of")


@njit(nogil=True, cache=True, _nrt=False)
def _wide_miss(merger, cache, data, s, e, h, out, j, k1, k2, k3, k4, first):
    """Merge chunk ``data[s:e]``, missing from the wide part (wide key ``(k1 .. k4)``, set
    ``first``, general hash ``h``), and keep its ids: a result of more than :data:`WIDE_IDS`
    ids goes to the general part, and the wide entry records only that."""
    n = merge_chunk(merger, data, s, e, out, j)
    if 0 <= n <= CACHE_IDS:
        _keep_wide(cache, data, s, e, h, out, j, n, k1, k2, k3, k4, first)
    return n


@njit(nogil=True, cache=True, _nrt=False)
def _keep_wide(cache, data, s, e, h, out, j, n, k1, k2, k3, k4, first):
    """Keep the ``n`` ids (at most :data:`CACHE_IDS`) at ``out[j:]`` of chunk ``data[s:e]``,
    of wide key ``(k1 .. k4)``, set ``first`` and general hash ``h``: in the wide part, or in
    the general one with the wide entry saying so."""
    if n > WIDE_IDS:
        general_put(cache, data, s, e, h, out, j, n)
    line_put(cache.wide, first, WIDE_WORDS, k1, k2, k3, k4, out, j,
             n if n <= WIDE_IDS else IN_GENERAL)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _fast_miss(merger, cache, data, s, e, h, out, j, k1, k2, first, wide_first):
    """Merge chunk ``data[s:e]``, missing from the fast part (fast key ``(k1, k2)``, sets at
    ``first`` and ``wide_first``), and keep its ids: a result of more than :data:`FAST_IDS`
    ids is kept as :func:`_wide_miss` keeps it, and the fast entry records only that
    (:data:`IN_WIDE`), so a miss never probes the other parts first. Inlined: the miss of
    nearly every new chunk, which then makes one call (the merge) instead of two."""
    n = merge_chunk(merger, data, s, e, out, j)
    if 0 <= n <= CACHE_IDS:
        if n > FAST_IDS:
            w1, w2, w3, w4 = wide_key(k1, k2)
            _keep_wide(cache, data, s, e, h, out, j, n, w1, w2, w3, w4, wide_first)
        line_put(cache.fast, first, FAST_WORDS, k1, k2, 0, 0, out, j,
                 n if n <= FAST_IDS else IN_WIDE)
    return n


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _general_chunk(model, work, cache, data, s, e, h, out, j):
    """:func:`merge_chunk` through the general cache, which keeps what the inline parts
    cannot: chunks of more than :data:`WIDE_KEY` bytes (up to :data:`CACHE_KEY`) or more than
    :data:`WIDE_IDS` ids (up to :data:`CACHE_IDS`); ``h``: the chunk's hash there (see
    :data:`KEY_WORDS`). A hit calls only the cache's functions: a call passes every array of
    its arguments, and the merger's are many."""
    slot = NOT_CACHED
    if e - s <= CACHE_KEY:
        slot = _general_hit(cache, data, s, e, h, out, j)
        if slot >= 0:
            return slot  # the hit's id count
    return _general_miss(chunk_merger(model, work), cache, data, s, e, h, out, j, slot)


@njit(nogil=True, cache=True, _nrt=False)
def _general_hit(cache, data, s, e, h, out, j):
    """The id count of a hit in the general cache, its ids copied to ``out[j:]``; else
    :func:`cache_find`'s answer (negative)."""
    slot = cache_find(cache, data, s, e, h)
    return cache_get(cache, slot, out, j) if slot >= 0 else slot


@njit(nogil=True, cache=True, _nrt=False)
def _general_miss(merger, cache, data, s, e, h, out, j, slot):
    """Merge a chunk the general cache lacks (``slot``: :func:`cache_find`'s answer, or
    :data:`NOT_CACHED`) and keep it there when the inline parts cannot."""
    n = merge_chunk(merger, data, s, e, out, j)
    if slot != NOT_CACHED and (e - s > WIDE_KEY or n > WIDE_IDS) and 0 <= n <= CACHE_IDS:
        cache_put(cache, -1 - slot, data, s, e, h, out, j, n)
    return n


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _encode_chunk(model, cache, work, data, s, e, out, j, keys, b):
    """Ids of chunk ``data[s:e]`` into ``out[j:]`` through the caches, with the chunk's key at
    ``keys[b:b + KEY_WORDS]`` (an inline part's, or none), merging on a miss. Inlined by Numba
    into the chunk loop (LLVM does not inline it), and so are both inline parts' lookups: a
    call passes every field of its tuples again, so only misses and the general part (about
    one chunk in ten; a general hit passes the cache's arrays alone) make one. A fast entry of
    :data:`IN_WIDE` sends the chunk to its wide set, a wide one of :data:`IN_GENERAL` to the
    general part."""
    where = keys[b + 4]
    part = where & 3
    if part == 0:
        return _general_chunk(model, work, cache, data, s, e, keys[b + 5], out, j)
    k1, k2 = keys[b], keys[b + 1]
    if part == FAST_PART:
        n = line_get(cache.fast, where >> 3, FAST_WORDS, k1, k2, 0, 0, out, j)
        if n != IN_WIDE:
            if n >= 0:
                return n
            return _fast_miss(chunk_merger(model, work), cache, data, s, e, keys[b + 5], out, j,
                              k1, k2, where >> 3, keys[b + 2])
        first = keys[b + 2]
        k1, k2, k3, k4 = wide_key(k1, k2)
    else:
        first = where >> 3
        k3, k4 = keys[b + 2], keys[b + 3]
    n = line_get(cache.wide, first, WIDE_WORDS, k1, k2, k3, k4, out, j)
    if n == IN_GENERAL:
        return _general_chunk(model, work, cache, data, s, e, keys[b + 5], out, j)
    if n >= 0:
        return n
    return _wide_miss(chunk_merger(model, work), cache, data, s, e, keys[b + 5], out, j, k1, k2, k3,
                      k4, first)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _prefetch_set(cache, keys, b):
    """Start loading the inline set (both lines of a wide one) of the chunk whose key is at
    ``keys[b:]``, a fast chunk's wide set too where its ids may be there, and the general
    part's first slot for the chunk's hash where they may be there (:data:`GENERAL_HINT`)."""
    where = keys[b + 4]
    if where & 3 == FAST_PART:
        prefetch(cache.fast, where >> 3)
        if keys[b + 3]:
            prefetch(cache.wide, keys[b + 2])
            prefetch(cache.wide, keys[b + 2] + WIDE_WORDS)
    elif where & 3 == WIDE_PART:
        prefetch(cache.wide, where >> 3)
        prefetch(cache.wide, (where >> 3) + WIDE_WORDS)
    if where & GENERAL_HINT:
        general_prefetch(cache, keys[b + 5])


@njit(nogil=True, cache=True, _nrt=False)
def _fill_block(model, data, offsets, d, p, last, stop, streaming, ends, doc_of):
    """Split chunks into ``ends[:BLOCK]`` from ``data[p:]`` (``p`` a chunk start of document
    ``d``) on through the next documents up to document ``last``, whose text is cut at
    ``stop``; ``doc_of[c]``: chunk ``c``'s document. Returns ``(k, d, p, held)``: ``k``
    chunks; ``(d, p)`` where the next block starts (``p`` is ``stop`` when document ``last``
    is done); ``held`` when, ``streaming``, the chunk at ``p`` waits for more text. A
    document's chunks are split within its own text (a rule's look-ahead never sees the
    next one), but a block runs on across documents, so short ones keep it full."""
    k = np.int64(0)  # not a literal 0: Numba would compile split_some for it too
    while k < BLOCK:
        end = stop if d == last else offsets[d + 1]
        if p < end:
            k2, p, held = split_some(data, p, end, model.split, not (streaming and d == last),
                                     ends, k, BLOCK)
            docs = doc_of[k:k2]  # a view indexed from 0: no scatters (bpe_cache.cache_get)
            for c in range(k2 - k):
                docs[c] = d
            k = k2
            if held or p < end:
                return k, d, p, held
        if d == last:
            break
        d += 1
        p = offsets[d]
    return k, d, p, False


@njit(nogil=True, cache=True, _nrt=False)
def _encode_run(model, cache, work, data, offsets, d, i, last, stop, streaming, out, j,
                out_offsets):
    """Encode the chunks of documents ``d`` (from ``data[i]``, a chunk start) through
    ``last`` (its text cut at ``stop``) into ``out[j:]`` up to the first chunk it leaves to
    the caller, setting ``out_offsets[e + 1]`` for every document ``e`` before ``last`` it
    finishes; returns ``(d, i, e, j)``: ``data[i:e]`` is a chunk of document ``d`` for
    :func:`encode_long_chunk` when ``e > i``; else document ``last`` is done (``i`` is
    ``stop``) or, when ``streaming``, ``i`` is the start of its first chunk more text could
    still change (its split's reach passes ``stop``, see :mod:`corpustok.kernels.split.interpreter`).

    Chunks are split :data:`BLOCK` at a time (``work.ends``, across documents:
    :func:`_fill_block`), then their keys are computed (``work.keys``), then they are encoded,
    each inline set prefetched :data:`AHEAD` chunks before its lookup: a set is one of
    millions of lines, so a lookup right after its chunk's split would wait for memory on
    nearly every chunk, and a block per document would wait at every document's start."""
    ends, keys, doc_of = work.ends, work.keys, work.doc_of
    while True:
        k, to_doc, p, held = _fill_block(model, data, offsets, d, i, last, stop, streaming,
                                         ends, doc_of)
        s = i  # documents are contiguous (Arrow offsets): a chunk starts where one ends
        for c in range(k):
            e = ends[c]
            b = c * KEY_WORDS
            keys[b + 4] = 0
            if e - s <= FAST_KEY:
                keys[b], keys[b + 1], _, _, h = line_key(data, s, e, FAST_WORDS)
                keys[b + 2] = line_set(cache.wide, WIDE_WORDS, h)
                # more ids than a fast entry holds: mostly non-ASCII chunks of 6 bytes or more
                high = (keys[b] | keys[b + 1]) & HIGH_BITS != 0
                keys[b + 3] = e - s > FAST_IDS and high
                keys[b + 4] = line_set(cache.fast, FAST_WORDS, h) << 3 | FAST_PART | \
                    (GENERAL_HINT if high and e - s > WIDE_IDS else 0)
                keys[b + 5] = h
            elif e - s <= WIDE_KEY:
                keys[b], keys[b + 1], keys[b + 2], keys[b + 3], h = line_key(
                    data, s, e, WIDE_WORDS)
                high = (keys[b] | keys[b + 1] | keys[b + 2] | keys[b + 3]) & HIGH_BITS != 0
                keys[b + 4] = line_set(cache.wide, WIDE_WORDS, h) << 3 | WIDE_PART | \
                    (GENERAL_HINT if high else 0)
                keys[b + 5] = h
            elif e - s <= CACHE_KEY:
                keys[b + 4] = GENERAL_HINT
                keys[b + 5] = general_hash(data, s, e)
            else:  # not cached: merged on every sighting
                keys[b + 5] = 0
            if c < AHEAD:
                _prefetch_set(cache, keys, b)
            s = e
        for c in range(k):
            if c + AHEAD < k:
                _prefetch_set(cache, keys, (c + AHEAD) * KEY_WORDS)
            while d < doc_of[c]:
                out_offsets[d + 1] = j
                d += 1
            e = ends[c]
            n = _encode_chunk(model, cache, work, data, i, e, out, j, keys, c * KEY_WORDS)
            if n < 0:
                return d, i, e, j
            j += n
            i = e
        while d < to_doc:
            out_offsets[d + 1] = j
            d += 1
        i = p
        if held or (d == last and i >= stop):
            return d, i, i, j


@njit(nogil=True, cache=True, _nrt=False)
def _next_special(data, p, end, specials):
    """``(position, length, id)`` of the leftmost special token in ``data[p:end]`` (the
    longest one at that position), or ``(end, 0, -1)``. ``specials`` is ``(sp_data, sp_off,
    sp_id, sp_first)``: token ``k`` is ``sp_data[sp_off[k]:sp_off[k + 1]]`` with id
    ``sp_id[k]``, and ``sp_first`` flags the bytes a token starts with. O(bytes * tokens)."""
    sp_data, sp_off, sp_id, sp_first = specials
    while p < end:
        if sp_first[data[p]]:
            best = 0
            tok = -1
            for k in range(len(sp_id)):
                a = sp_off[k]
                n = sp_off[k + 1] - a
                if n > best and p + n <= end and same_bytes(data, p, sp_data, a, n):
                    best = n
                    tok = sp_id[k]
            if best:
                return p, best, tok
        p += 1
    return end, 0, -1


@njit(nogil=True, cache=True)
def checked_room(nbytes, substrate):
    """The ids :func:`encode_docs` reserves for ``nbytes`` of well-formed text: one a base
    symbol (ids never outnumber them), and the slots a cache hit writes past the last."""
    return most_symbols(nbytes, substrate) + WIDE_IDS


@njit(nogil=True, cache=True)
def encode_docs(data, offsets, model, cache, specials, recognize, final, well_formed, room):
    """Encode every document ``data[offsets[d]:offsets[d + 1]]`` of a batch in one call.

    Pre-tokenizes with ``split_some`` and encodes each chunk with ``model`` through
    ``cache`` (see the module docstring). With ``recognize``, the ``specials`` (see
    :func:`_next_special`) are matched leftmost-longest in the raw text and split it, as HF's
    added vocabulary does, and their ids are emitted. With ``final`` False (streaming, one
    document) encoding stops at the first chunk that more text could still change.
    ``well_formed``: the caller knows the batch is well-formed UTF-8 (text from Python
    ``str``, or checked by Arrow), so nothing is replaced and the output is sized by
    :func:`most_symbols` without a counting pass; else a first pass counts symbols and
    replacements. ``room``: an int32 array the ids are written into when it holds the
    output's reserve (below), so that a caller can hand over memory whose pages are already
    in use (a memory pool's); else (an empty one) the output is a new array.

    Returns ``(ids int32, out_offsets int64 [n+1], replaced int64 [n], stop)``: ``replaced``
    counts each whole document's U+FFFD replacements, ``stop`` is the byte position where
    unencoded text begins (the end of the batch when ``final``). O(bytes) plus O(m^2) per
    uncached chunk of m <= 48 symbols, O(m log m) above. Memory: one int32 per base symbol for
    the output (reserved for :func:`most_symbols` of checked text, of which only the ids
    written are touched), plus the largest chunk's work arrays.
    """
    ndoc = len(offsets) - 1
    replaced = np.zeros(ndoc, np.int64)
    if well_formed:
        need = checked_room(offsets[ndoc] - offsets[0], model.substrate)
    else:
        counts = np.empty(ndoc, np.int64)
        count_symbols(data, offsets, model.substrate, counts, replaced)
        need = counts.sum() + WIDE_IDS
    # ids <= base symbols: the output never grows; a cache hit writes WIDE_IDS slots
    if len(room) >= need:
        out = room
    else:
        out = np.empty(need, np.int32)
        advise_huge_pages(out)
    out_offsets = np.zeros(ndoc + 1, np.int64)
    # never reassigned: a reassigned array in this loop makes Numba refcount it each iteration
    work = EncodeWork(np.empty(3 * WORK, np.int32), np.empty(3 * WORK, np.int64),
                      np.empty(BLOCK, np.int64), np.empty(KEY_WORDS * BLOCK, np.int64),
                      long_work(np.int64(LONG)), np.empty(BLOCK, np.int64))
    # int64 zeros and a runtime bool (``not final`` is False below), not literals: Numba
    # compiles a callee (and its callees) once more for each literal it is called with, and a
    # variable first set to a literal is one while typing has not yet seen its other values
    j = np.int64(0)
    stop = offsets[ndoc]
    if ndoc and final and not recognize:  # one run over every document
        d, i = np.int64(0), offsets[0]
        while True:
            d, i, e, j = _encode_run(model, cache, work, data, offsets, d, i, ndoc - 1, stop,
                                     not final, out, j, out_offsets)
            if e == i:
                break
            j += encode_long_chunk(data, i, e, model, out, j)
            i = e
        out_offsets[ndoc] = j
        return out[:j], out_offsets, replaced, stop
    for d in range(ndoc):
        i = offsets[d]
        end = offsets[d + 1]
        while i < end:  # segments: the text up to the next special token, then the token
            p, sp_len, sp_tok = end, 0, -1
            if recognize:
                p, sp_len, sp_tok = _next_special(data, i, end, specials)
            streaming = not final and p == end
            while True:
                _, i, e, j = _encode_run(model, cache, work, data, offsets, d, i, d, p,
                                         streaming, out, j, out_offsets)
                if e == i:
                    break
                j += encode_long_chunk(data, i, e, model, out, j)
                i = e
            if i < p:  # streaming: the rest waits for more text
                stop = i
                break
            if sp_len:
                out[j] = sp_tok
                j += 1
                i = p + sp_len
        out_offsets[d + 1] = j
    return out[:j], out_offsets, replaced, stop
