"""Ranges of a flat array gathered into one, by a kernel (a numpy gather built an int64
index a byte: 16 bytes of memory a byte of a whole batch). Apart from :mod:`corpustok.arrow`,
which imports no Numba (the packed reader and the readers load it)."""
import numpy as np

from corpustok.arrow import pool_array, read_only
from corpustok.kernels.memory.buffers import gather_into


def gather_ranges(data, starts, lengths, *, in_pool=False):
    """``(packed, offsets int64 [n + 1])``: the ranges ``data[starts[k]:starts[k] + lengths[k]]``
    (a 1-d array) one after another, in one kernel call (no Python step per range, no index
    per byte). ``in_pool``: ``packed`` is in Arrow's pool (a batch's text, freed with the
    batch: decision 0046), else a numpy array (what a tokenizer keeps, such as its cache's
    seed). A range outside ``data`` is a ValueError."""
    data = np.ascontiguousarray(data)
    starts = np.asarray(starts, np.int64)
    lengths = np.asarray(lengths, np.int64)
    if len(starts) != len(lengths) or data.ndim != 1:
        raise ValueError("gather_ranges: one start and one length a range, of a 1-d array")
    if len(lengths) and ((lengths < 0).any() or (starts < 0).any() or
                         (starts > len(data) - lengths).any()):  # no sum to overflow
        raise ValueError(f"gather_ranges: a range outside the {len(data)} items")
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    out = pool_array(offsets[-1], data.dtype) if in_pool else np.empty(offsets[-1], data.dtype)
    gather_into(read_only(data), read_only(starts), read_only(offsets), out)
    return out, offsets
