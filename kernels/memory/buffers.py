"""Flat arrays for kernels: growable ones, for kernels that do not know their output size up
front, and ranges gathered into one."""
import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def grown(arr, need):
    """``arr`` itself when it holds ``need`` items, else a copy with at least twice the room
    (doubling keeps a sequence of appends O(1) each)."""
    if need <= len(arr):
        return arr
    out = np.empty(max(need, 2 * len(arr)), arr.dtype)
    out[:len(arr)] = arr
    return out


@njit(nogil=True, cache=True)
def gather_into(data, starts, offsets, out):
    """Copy each range ``data[starts[k]:starts[k] + n]`` (``n = offsets[k + 1] - offsets[k]``)
    to ``out[offsets[k]:offsets[k + 1]]``. The caller checks the ranges. O(bytes copied), no
    index array (a numpy gather builds an int64 index per byte)."""
    for k in range(len(offsets) - 1):
        a = offsets[k]
        n = offsets[k + 1] - a
        s = starts[k]
        out[a:a + n] = data[s:s + n]
