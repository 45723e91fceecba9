"""Growable flat arrays for kernels that do not know their output size up front."""
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
