"""One chunk's token ids without the cache: its base symbols as ids, the whole-token rule, the
merge in the batch kernel's work arrays, or, for a chunk too long for them, in arrays of its
own. :mod:`corpustok.kernels.bpe.encode` calls these on a cache miss."""
from collections import namedtuple

import numpy as np
from numba import njit

from corpustok.kernels.bpe.cache import CACHE_KEY
from corpustok.kernels.bpe.merge import (BUCKET_MIN, bucket_work, long_work, merge_buckets,
                                         merge_long, merge_short)
from corpustok.kernels.bpe.premerge import premerge
from corpustok.kernels.substrate import SECOND, UTF8, UTF16, put_symbols
from corpustok.kernels.bpe.token_table import find_token
from corpustok.kernels.unicode import short_char_length, utf8_step

SHORT = 48  # chunks of at most this many symbols use the quadratic scan; longer ones the heap
LONG = 2 * CACHE_KEY  # the most symbols a chunk the cache can keep has (utf16: 2 a byte)
WORK = 1024  # bytes a chunk may have to go through the batch kernel's own work arrays
SAME_SYMBOL = np.arange(2 * SECOND, dtype=np.int64)  # every base symbol mapped to itself

@njit(nogil=True, cache=True, _nrt=False)
def _put_id(ids, n, t):
    """Append id ``t`` to ``ids[:n]`` unless it is -1 (a symbol the vocabulary lacks)."""
    if t >= 0:
        ids[n] = t
        return n + 1
    return n


@njit(nogil=True, cache=True, _nrt=False)
def _own_symbols(data, i, e, substrate):
    """How many bytes from ``data[i]`` are one character whose symbols are its bytes: an
    ASCII or 2-byte one under utf8 and ube, a 3-byte one under utf8 (0: decode it)."""
    if substrate == UTF16:
        return 0
    if data[i] < 0x80:
        return 1
    m = short_char_length(data, i, e)
    return m if m == 2 or substrate == UTF8 else 0


@njit(nogil=True, cache=True, _nrt=False)
def chunk_symbols(data, s, e, substrate, sym_id, ids):
    """Token ids of the base symbols of ``data[s:e]`` into ``ids`` (room for those symbols);
    returns their count. Symbols outside the vocabulary are skipped. O(e - s). Characters
    whose symbols are their bytes are mapped inline, the rest decoded by :func:`utf8_step`."""
    n = np.int64(0)  # a literal 0 would compile _put_id and put_symbols for it too
    i = s
    while i < e:
        m = _own_symbols(data, i, e, substrate)
        if m:
            for k in range(i, i + m):
                n = _put_id(ids, n, sym_id[data[k]])
            i += m
            continue
        if data[i] < 0x80:  # utf16: the byte, then a zero byte
            n = _put_id(ids, _put_id(ids, n, sym_id[data[i]]), sym_id[0])
            i += 1
            continue
        cp, m, _ = utf8_step(data, i, e)
        i += m
        stop = put_symbols(cp, substrate, ids, n)
        k = n
        while k < stop:
            n = _put_id(ids, n, sym_id[ids[k]])
            k += 1
    return n


@njit(nogil=True, cache=True, _nrt=False)
def _whole_token(data, s, e, substrate, whole, sym):
    """The id of the token whose base symbols are those of ``data[s:e]``, or -1; ``sym`` has
    room for them (4 a byte): :func:`chunk_symbols` with every symbol mapped to itself.
    O(e - s)."""
    n = chunk_symbols(data, s, e, substrate, SAME_SYMBOL, sym)
    return find_token(whole.slots, whole.tok_sym, whole.tok_off, sym, 0, n)


@njit(nogil=True, cache=True)
def encode_long_chunk(data, s, e, model, out, j):
    """Encode a chunk too long for the work arrays in place in ``out[j:]`` (which has room for
    its base symbols) with :func:`merge_long`, or from :data:`BUCKET_MIN` symbols with
    :func:`merge_buckets` unless that refuses the chunk; returns the number of ids. O(m log
    m) time (O(m) by buckets) and 32 bytes of work memory per symbol for m symbols (by
    buckets 36, and 8 bytes per order value; a refused chunk then costs both).

    It allocates, so only an NRT function may call it: called from an ``_nrt=False`` one it
    is compiled without NRT too, and its work arrays are never freed.
    """
    substrate, _, sym_id, pairs, whole, pre = model
    if len(whole.slots):
        t = _whole_token(data, s, e, substrate, whole, np.empty(4 * (e - s), np.int64))
        if t >= 0:
            out[j] = t
            return 1
    ids = out[j:]
    n = premerge(ids, chunk_symbols(data, s, e, substrate, sym_id, ids), pre, pairs.new_of_rank)
    if n >= BUCKET_MIN:
        m = merge_buckets(ids, n, pairs, *bucket_work(n, pairs.buckets))
        if m >= 0:
            return m
    work = long_work(n)
    return merge_long(ids, n, pairs, work.node, work.heap)


# What merge_chunk reads: the model's arrays but the split's program, and three work arrays.
Merger = namedtuple("Merger", "substrate sym_id pairs whole pre ids rank long")


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def chunk_merger(model, work):
    """What :func:`merge_chunk` reads of the model and the work arrays: a call passes every
    array of its arguments field by field, and the split's program alone has a dozen."""
    return Merger(model.substrate, model.sym_id, model.pairs, model.whole, model.pre, work.ids,
                  work.rank, work.long)


@njit(nogil=True, cache=True, _nrt=False)
def merge_chunk(merger, data, s, e, out, j):
    """Ids of ``data[s:e]`` into ``out[j:]`` by :func:`merge_short` in the work arrays ``ids``
    and ``rank`` of ``merger`` (:func:`chunk_merger`), or, from :data:`SHORT` symbols up to
    :data:`LONG`, by :func:`merge_long` in its arrays (``long``); returns their count, or -1
    for a chunk of more than :data:`WORK` bytes or :data:`LONG` symbols (then
    :func:`encode_long_chunk`).
    O(m^2) for m <= 48 symbols, O(m log m) above."""
    substrate, sym_id, pairs, whole, pre, ids, rank, long = merger
    if e - s > WORK:
        return -1
    if len(whole.slots):
        t = _whole_token(data, s, e, substrate, whole, rank)
        if t >= 0:
            out[j] = t
            return 1
    n = chunk_symbols(data, s, e, substrate, sym_id, ids)
    if n > LONG:
        return -1
    n = premerge(ids, n, pre, pairs.new_of_rank)
    if n > SHORT:
        n = merge_long(ids, n, pairs, long.node, long.heap)
    else:
        n = merge_short(ids, n, pairs, rank)
    dst = out[j:j + n]  # a view indexed from 0: no gathers (see bpe_cache.cache_get)
    for k in range(n):
        dst[k] = ids[k]
    return n
