"""Parquet data-page bodies of token shards, encoded straight from Arrow buffers.

Only what a token shard needs: RLE runs of repetition/definition levels computed per row from
list offsets (O(rows), not O(values) as a generic level builder), dictionary indices as one
bit-packed run of 16-bit values (byte-aligned, so zstd sees whole bytes), PLAIN int32 values,
and PLAIN byte arrays. Formats follow the Parquet spec (``Encodings.md``: RLE/bit-packing
hybrid, PLAIN); the page headers and footer are written by ``corpustok.pipeline.shard_parquet``.
"""
import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def _varint(buf, pos, n):
    while n > 0x7F:
        buf[pos] = (n & 0x7F) | 0x80
        pos += 1
        n >>= 7
    buf[pos] = n
    return pos + 1


@njit(nogil=True, cache=True)
def _rle_run(buf, pos, count, value):
    """One RLE run of ``count`` copies of a level (levels fit one byte here)."""
    pos = _varint(buf, pos, count << 1)
    buf[pos] = value
    return pos + 1


@njit(nogil=True, cache=True)
def _u32(buf, pos, n):
    for k in range(4):
        buf[pos + k] = (n >> (8 * k)) & 0xFF


@njit(nogil=True, cache=True)
def _extend(buf, pos, cur, count, value, n):
    """Append ``n`` copies of level ``value`` to the open run ``(cur, count)``, writing that
    run out first when the value changes; returns the new ``(pos, cur, count)``."""
    if value == cur:
        return pos, cur, count + n
    if count:
        pos = _rle_run(buf, pos, count, cur)
    return pos, value, n


@njit(nogil=True, cache=True)
def _close(buf, start, pos, cur, count):
    """Write the last run and the 4-byte length before the runs (at ``start``)."""
    if count:
        pos = _rle_run(buf, pos, count, cur)
    _u32(buf, start, pos - start - 4)
    return pos


@njit(nogil=True, cache=True)
def _list_levels(offsets, a, b, buf, pos, rep):
    """Length-prefixed RLE runs of the repetition (``rep``) or definition levels of rows
    ``a..b`` of a non-null list column with non-null items: a row of n >= 1 values has
    repetition levels 0, 1 x (n - 1) and definition levels 2 x n; an empty row one 0."""
    start = pos
    pos, cur, count = pos + 4, -1, 0
    for r in range(a, b):
        n = offsets[r + 1] - offsets[r]
        if rep:
            pos, cur, count = _extend(buf, pos, cur, count, 0, 1)
            if n > 1:
                pos, cur, count = _extend(buf, pos, cur, count, 1, n - 1)
        elif n:
            pos, cur, count = _extend(buf, pos, cur, count, 2, n)
        else:
            pos, cur, count = _extend(buf, pos, cur, count, 0, 1)
    return _close(buf, start, pos, cur, count)


@njit(nogil=True, cache=True)
def value_range(values, lo, hi):
    """``(min, max)`` of ``values[lo:hi]`` in one pass (``(0, -1)`` when empty)."""
    if hi <= lo:
        return 0, -1
    a = values[lo]
    b = values[lo]
    for k in range(lo + 1, hi):
        v = values[k]
        a = min(a, v)
        b = max(b, v)
    return a, b


@njit(nogil=True, cache=True)
def list_page(offsets, values, a, b, width):
    """The body of a data page holding rows ``a..b`` of a ``list<int32>`` column: repetition
    and definition levels, then the values as 16-bit dictionary indices (``width`` 16, with
    an identity dictionary) or PLAIN int32 (``width`` 32)."""
    lo = offsets[a]
    hi = offsets[b]
    n = hi - lo
    rows = b - a
    # Each row adds at most two runs per level stream (a 10-byte varint and a value each).
    buf = np.empty(8 + 2 * 2 * 11 * rows + 16 + n * (width // 8) + 16, np.uint8)
    pos = _list_levels(offsets, a, b, buf, 0, True)
    pos = _list_levels(offsets, a, b, buf, pos, False)
    if width == 16:
        buf[pos] = 16  # the bit width of the indices
        if n == 0:  # a page of empty rows only: no run at all (as parquet-cpp writes it)
            return buf[:pos + 1]
        groups = (n + 7) // 8
        pos = _varint(buf, pos + 1, (groups << 1) | 1)  # one bit-packed run
        for k in range(n):
            v = values[lo + k]
            buf[pos] = v & 0xFF
            buf[pos + 1] = (v >> 8) & 0xFF
            pos += 2
        for k in range(groups * 8 - n):  # the last group is padded
            buf[pos] = 0
            buf[pos + 1] = 0
            pos += 2
    else:
        for k in range(n):
            v = values[lo + k]
            for j in range(4):
                buf[pos + j] = (v >> (8 * j)) & 0xFF
            pos += 4
    return buf[:pos]


@njit(nogil=True, cache=True)
def _validity_levels(valid, buf, pos):
    """Length-prefixed RLE runs of the definition levels (1 present, 0 null) of a flat
    optional column."""
    start = pos
    pos, cur, count = pos + 4, -1, 0
    for present in valid:
        pos, cur, count = _extend(buf, pos, cur, count, 1 if present else 0, 1)
    return _close(buf, start, pos, cur, count)


@njit(nogil=True, cache=True)
def byte_array_page(offsets, data, valid, optional):
    """The body of a data page of a string column: definition levels when ``optional``,
    then each present value PLAIN (4-byte little-endian length, bytes)."""
    rows = len(offsets) - 1
    buf = np.empty(4 + 6 * rows + 4 + 4 * rows + (offsets[rows] - offsets[0]), np.uint8)
    pos = _validity_levels(valid, buf, 0) if optional else 0
    for r in range(rows):
        if not valid[r]:
            continue
        s = offsets[r]
        e = offsets[r + 1]
        _u32(buf, pos, e - s)
        pos += 4
        buf[pos:pos + e - s] = data[s:e]
        pos += e - s
    return buf[:pos]
