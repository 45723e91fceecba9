"""Byte-level BPE encoding: rank-based merging, a bounded chunk cache, one call per batch.

A model is two flat arrays built once per vocabulary: ``sym_id`` maps the 512 base symbols
(see :mod:`corpustok.kernels.substrate_codec`) to token ids (-1 when the vocabulary lacks the symbol; such
symbols are skipped, as HF's BPE model without an unknown token skips them), and an
open-addressing pair table (:func:`build_pair_table`) maps ``(left_id, right_id)`` to
``(rank, new_id)``. Merging applies the lowest-rank pair first, the leftmost on ties, which is
exactly HF's ``Word::merge_all`` and GPT-2's ``bpe()`` (the table and the merge loops are in
:mod:`corpustok.kernels.bpe_merge`).

Chunks (GPT-2 pre-tokenizer pieces) are looked up first in a bounded cache keyed by the chunk's
bytes: fixed-size flat arrays, 4-slot probing, least-used eviction with aging, so memory is
constant and a hit costs one hash of the chunk plus a byte compare. The cache is a pure memo: results never
depend on its state.
"""
import numpy as np
from numba import njit

from corpustok.kernels.bpe_merge import long_work, merge_long, merge_short
from corpustok.kernels.split import LOOKAHEAD, chunk_end
from corpustok.kernels.substrate_codec import UTF8, UTF16, put_symbols
from corpustok.kernels.unicode import utf8_step

FNV_OFFSET = np.int64(-3750763034362895579)  # 0xCBF29CE484222325
FNV_PRIME = np.int64(1099511628211)
SHORT = 48  # chunks of at most this many symbols use the quadratic scan; longer ones the heap
CACHE_KEY = 64  # chunks longer than this many bytes are not cached
CACHE_IDS = 32  # nor chunks of more tokens
CACHE_PROBES = 4


@njit(nogil=True, cache=True, _nrt=False)
def chunk_symbols(data, s, e, substrate, sym_id, ids):
    """Token ids of the base symbols of ``data[s:e]`` into ``ids`` (room for ``3 * (e - s)``);
    returns ``(count, U+FFFD replacements)``. Symbols outside the vocabulary are skipped.
    O(e - s)."""
    n = 0
    bad = 0
    i = s
    while i < e:
        b = np.int64(data[i])
        if b < 0x80:
            t = sym_id[b]
            if t >= 0:
                ids[n] = t
                n += 1
            if substrate == UTF16:
                t = sym_id[0]
                if t >= 0:
                    ids[n] = t
                    n += 1
            i += 1
            continue
        cp, m, r = utf8_step(data, i, e)
        bad += r
        i += m
        stop = put_symbols(cp, substrate, ids, n)
        k = n
        while k < stop:
            t = sym_id[ids[k]]
            if t >= 0:
                ids[n] = t
                n += 1
            k += 1
    return n, bad


@njit(nogil=True, cache=True, _nrt=False)
def symbol_total(data, s, e, substrate):
    """Exact number of base symbols of ``data[s:e]``. O(e - s)."""
    c = 0
    i = s
    while i < e:
        b = np.int64(data[i])
        if b < 0x80:
            c += 2 if substrate == UTF16 else 1
            i += 1
            continue
        cp, m, r = utf8_step(data, i, e)
        i += m
        if substrate == UTF16:
            c += 2 if cp < 0x10000 else 4
        elif cp < 0x80:
            c += 1
        elif cp < 0x800:
            c += 2
        elif cp < 0x10000:
            c += 3 if substrate == UTF8 else 2
        else:
            c += 4
    return c


@njit(nogil=True, cache=True, _nrt=False)
def _chunk_hash(data, s, e):
    """FNV-1a of ``data[s:e]`` with a final mix. O(e - s)."""
    h = FNV_OFFSET
    for i in range(s, e):
        h = (h ^ np.int64(data[i])) * FNV_PRIME
    return h ^ (h >> 31)


@njit(nogil=True, cache=True, _nrt=False)
def _same_bytes(a, i, b, j, n):
    """Whether ``a[i:i + n]`` equals ``b[j:j + n]``. O(n)."""
    for k in range(n):
        if a[i + k] != b[j + k]:
            return False
    return True


@njit(nogil=True, cache=True, _nrt=False)
def _cache_find(meta, c_key, data, s, e, h):
    """Slot holding chunk ``data[s:e]`` (hash ``h``), or ``-1 - slot`` of the slot to fill.

    Probes ``CACHE_PROBES`` consecutive slots; a hit bumps the slot's use count. On a miss the
    slot to fill is an empty one, else the least used, and the probed counts are halved, so
    frequent chunks stay while one-off chunks (most of a text's distinct ones) cycle through.
    O(CACHE_PROBES + chunk length).
    """
    mask = len(meta) - 1
    base = h & mask
    length = e - s
    empty = -1
    victim = base
    for t in range(CACHE_PROBES):
        slot = (base + t) & mask
        if meta[slot, 1] < 0:
            if empty < 0:
                empty = slot
            continue
        if meta[slot, 0] == h and meta[slot, 1] == length and \
                _same_bytes(data, s, c_key, slot * CACHE_KEY, length):
            if meta[slot, 4] < 1 << 20:
                meta[slot, 4] += 1
            return slot
        if meta[slot, 4] < meta[victim, 4]:
            victim = slot
    if empty >= 0:
        return -1 - empty
    for t in range(CACHE_PROBES):
        meta[(base + t) & mask, 4] >>= 1
    return -1 - victim


@njit(nogil=True, cache=True)
def encode_long_chunk(data, s, e, substrate, sym_id, pairs, out, j):
    """Encode a chunk too long for the batch kernel's work arrays in place in ``out[j:]``
    (which has room for its base symbols) with :func:`merge_long`; returns ``(ids, U+FFFD)``.
    O(m log m) time and 32 bytes of work memory per symbol for m symbols."""
    ids = out[j:j + symbol_total(data, s, e, substrate)]
    n, bad = chunk_symbols(data, s, e, substrate, sym_id, ids)
    rank, new, nxt, prv, heap = long_work(n)
    return merge_long(ids, n, pairs, rank, new, nxt, prv, heap), bad


@njit(nogil=True, cache=True, _nrt=False)
def _special_at(data, p, end, sp_data, sp_off, sp_id):
    """``(length, id)`` of the longest special token starting at ``data[p]``, or ``(0, -1)``."""
    best = 0
    tok = -1
    for k in range(len(sp_id)):
        a = sp_off[k]
        n = sp_off[k + 1] - a
        if n > best and p + n <= end and _same_bytes(data, p, sp_data, a, n):
            best = n
            tok = sp_id[k]
    return best, tok


WORK = 1024  # symbols a chunk may have to go through the batch kernel's own work arrays


@njit(nogil=True, cache=True)
def encode_docs(data, offsets, substrate, cls, sym_id, pairs, meta, c_key, c_ids,
                sp_data, sp_off, sp_id, sp_first, recognize, final):
    """Encode every document ``data[offsets[d]:offsets[d + 1]]`` of a batch in one call.

    Pre-tokenizes with the GPT-2 ``chunk_end``, maps each chunk to base-symbol token ids and
    merges it (cache first: ``meta``/``c_key``/``c_ids``, see :func:`_cache_find`). With
    ``recognize``, the special tokens ``sp_data[sp_off[k]:sp_off[k + 1]]`` (id ``sp_id[k]``;
    ``sp_first`` flags their first bytes) are matched leftmost-longest in the raw text and
    split it, as HF's added vocabulary does, and their ids are emitted. With ``final`` False
    (streaming, one document) encoding stops at the first chunk that more text could still
    change: one ending less than :data:`LOOKAHEAD` code points before the end.

    Returns ``(ids int32, out_offsets int64 [n+1], replaced int64 [n], stop)``: ``stop`` is
    the byte position where unencoded text begins (the end of the batch when ``final``).
    O(bytes) plus O(m^2) per uncached chunk of m <= 48 symbols, O(m log m) above. Memory:
    one int32 per base symbol for the output, plus the largest chunk's work arrays.
    """
    ndoc = len(offsets) - 1
    total = 0
    for d in range(ndoc):  # ids <= base symbols: the output never grows
        total += symbol_total(data, offsets[d], offsets[d + 1], substrate)
    out = np.empty(total, np.int32)
    out_offsets = np.zeros(ndoc + 1, np.int64)
    replaced = np.zeros(ndoc, np.int64)
    # Work arrays are never reassigned below: a reassigned array in this loop makes Numba
    # refcount it on every iteration.
    ids = np.empty(3 * WORK, np.int32)
    rank = np.empty(3 * WORK, np.int64)
    new = np.empty(3 * WORK, np.int64)
    j = 0
    stop = offsets[ndoc]
    for d in range(ndoc):
        i = offsets[d]
        end = offsets[d + 1]
        bad = 0
        while i < end:
            # a segment [i, seg_end) runs up to the next special token (or the document end)
            seg_end = end
            sp_len = 0
            sp_tok = -1
            if recognize:
                p = i
                while p < end:
                    if sp_first[data[p]]:
                        sp_len, sp_tok = _special_at(data, p, end, sp_data, sp_off, sp_id)
                        if sp_len:
                            break
                    p += 1
                seg_end = p
            while i < seg_end:
                e = chunk_end(data, i, seg_end, cls)
                if not final and seg_end == end:
                    # final only when LOOKAHEAD complete code points follow the chunk
                    seen = 0
                    q = e
                    while q < end and seen < LOOKAHEAD:
                        q += utf8_step(data, q, end)[1]
                        seen += 1
                    if seen < LOOKAHEAD:
                        break
                length = e - i
                if length > WORK:
                    n, r = encode_long_chunk(data, i, e, substrate, sym_id, pairs, out, j)
                    j += n
                    bad += r
                    i = e
                    continue
                h = np.int64(0)
                slot = -1
                if length <= CACHE_KEY:
                    h = _chunk_hash(data, i, e)
                    slot = _cache_find(meta, c_key, data, i, e, h)
                if slot >= 0:
                    n = meta[slot, 2]
                    base = slot * CACHE_IDS
                    for k in range(n):
                        out[j + k] = c_ids[base + k]
                    j += n
                    bad += meta[slot, 3]
                    i = e
                    continue
                n, r = chunk_symbols(data, i, e, substrate, sym_id, ids)
                if n <= SHORT:
                    n = merge_short(ids, n, pairs, rank, new)
                    for k in range(n):
                        out[j + k] = ids[k]
                    if length <= CACHE_KEY and n <= CACHE_IDS:
                        _cache_put(meta, c_key, c_ids, -1 - slot, data, i, e, h, ids, n, r)
                else:
                    n, r = encode_long_chunk(data, i, e, substrate, sym_id, pairs, out, j)
                j += n
                bad += r
                i = e
            if i < seg_end:  # streaming: the rest waits for more text
                stop = i
                break
            if sp_len:
                out[j] = sp_tok
                j += 1
                i = seg_end + sp_len
        out_offsets[d + 1] = j
        replaced[d] = bad
    return out[:j], out_offsets, replaced, stop


@njit(nogil=True, cache=True, _nrt=False)
def _cache_put(meta, c_key, c_ids, slot, data, s, e, h, ids, n, bad):
    """Store chunk ``data[s:e]`` (hash ``h``) -> ``ids[:n]`` in ``slot``. O(e - s + n)."""
    meta[slot, 0] = h
    meta[slot, 1] = e - s
    meta[slot, 2] = n
    meta[slot, 3] = bad
    meta[slot, 4] = 1
    base = slot * CACHE_KEY
    for k in range(e - s):
        c_key[base + k] = data[s + k]
    base = slot * CACHE_IDS
    for k in range(n):
        c_ids[base + k] = ids[k]


@njit(nogil=True, cache=True)
def expand_ids(ids, doc_off, tok_sym, tok_off, is_special):
    """Base symbols of token ids, cut into segments at special tokens (which have no
    symbols): document ``d`` with ``s`` specials owns ``s + 1`` consecutive segments.

    Returns ``(symbols uint16, seg_off int64)``. Ids must be valid (checked by the caller).
    O(ids + symbols).
    """
    nsym = 0
    nseg = len(doc_off) - 1
    for k in range(doc_off[0], doc_off[len(doc_off) - 1]):
        t = ids[k]
        nsym += tok_off[t + 1] - tok_off[t]
        if is_special[t]:
            nseg += 1
    symbols = np.empty(nsym, np.uint16)
    seg_off = np.empty(nseg + 1, np.int64)
    seg_off[0] = 0
    j = 0
    g = 0
    for d in range(len(doc_off) - 1):
        for k in range(doc_off[d], doc_off[d + 1]):
            t = ids[k]
            if is_special[t]:
                g += 1
                seg_off[g] = j
                continue
            for s in range(tok_off[t], tok_off[t + 1]):
                symbols[j] = tok_sym[s]
                j += 1
        g += 1
        seg_off[g] = j
    return symbols, seg_off


@njit(nogil=True, cache=True)
def stitch_text(ids, doc_off, is_special, sp_text, sp_off, seg_text, seg_off):
    """Join each document's decoded segments (``seg_text[seg_off[g]:seg_off[g + 1]]``, as
    cut by :func:`expand_ids`) with the UTF-8 of its special tokens (``sp_text[sp_off[t]:
    sp_off[t + 1]]`` for token ``t``). Returns ``(text uint8, text_off int64)``. O(output)."""
    total = len(seg_text)
    for k in range(doc_off[0], doc_off[len(doc_off) - 1]):
        t = ids[k]
        if is_special[t]:
            total += sp_off[t + 1] - sp_off[t]
    text = np.empty(total, np.uint8)
    text_off = np.empty(len(doc_off), np.int64)
    text_off[0] = 0
    j = 0
    g = 0
    for d in range(len(doc_off) - 1):
        for k in range(doc_off[d], doc_off[d + 1] + 1):
            if k < doc_off[d + 1] and not is_special[ids[k]]:
                continue
            for s in range(seg_off[g], seg_off[g + 1]):  # the segment ending here
                text[j] = seg_text[s]
                j += 1
            g += 1
            if k < doc_off[d + 1]:
                t = ids[k]
                for s in range(sp_off[t], sp_off[t + 1]):
                    text[j] = sp_text[s]
                    j += 1
        text_off[d + 1] = j
    return text, text_off
