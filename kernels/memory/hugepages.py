"""Huge pages for very large work arrays: ``madvise(MADV_HUGEPAGE)`` from jitted code.

A chunk of millions of symbols (one adversarial document) is merged in work arrays of hundreds
of MB that the merge walks out of order; with 4 KB pages each walk step risks a TLB miss and
the first touch of every page a fault. Linux backs ``MADV_HUGEPAGE`` ranges with 2 MB pages
(where transparent huge pages are in ``madvise`` or ``always`` mode); numpy asks for it on its
own large arrays, Numba's allocator does not. Declared by name, as :mod:`.prefetch` declares
its intrinsic, so that cached code links to the C library's ``madvise`` wherever it loads; off
Linux this does nothing.
"""
import sys

import numpy as np

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

HUGE_PAGE = 1 << 21
MADV_HUGEPAGE = 14
MIN_BYTES = 8 * HUGE_PAGE  # smaller arrays are left as they are
LINUX = sys.platform.startswith("linux")


@intrinsic
def _madvise(typingctx, address, length, advice):
    """``madvise(address, length, advice)`` of the C library (its result is ignored: advice
    never changes what a program computes)."""
    if not all(isinstance(a, types.Integer) for a in (address, length, advice)):
        return None

    def codegen(context, builder, signature, args):
        i64, i32 = ir.IntType(64), ir.IntType(32)
        ptr = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(i32, [ptr, i64, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "madvise")
        a = builder.inttoptr(context.cast(builder, args[0], signature.args[0], types.int64),
                             ptr)
        n = context.cast(builder, args[1], signature.args[1], types.int64)
        k = builder.trunc(context.cast(builder, args[2], signature.args[2], types.int64), i32)
        builder.call(fn, [a, n, k])
        return context.get_dummy_value()

    return types.void(address, length, advice), codegen


@njit(nogil=True, cache=True)
def advise_huge_pages(arr, min_bytes=MIN_BYTES):
    """Ask for 2 MB pages under the whole huge pages inside ``arr``'s memory (a contiguous
    array of at least ``min_bytes``), before its pages are first touched."""
    nbytes = arr.size * arr.itemsize
    if not LINUX or nbytes < min_bytes:
        return
    start = (arr.ctypes.data + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1)
    end = (arr.ctypes.data + nbytes) & ~(HUGE_PAGE - 1)
    if end > start:
        _madvise(start, end - start, MADV_HUGEPAGE)


def huge_page_array(n, dtype, fill):
    """``n`` items of ``dtype`` set to ``fill``, from one huge page up starting at a huge page
    boundary on huge pages: a table probed at random (the pair table, the chunk cache) then
    costs a few TLB entries instead of one a 4 KB page (a software prefetch that misses the
    TLB may be dropped)."""
    itemsize = np.dtype(dtype).itemsize
    align = HUGE_PAGE if n * itemsize >= HUGE_PAGE else 64
    raw = np.empty(n + align // itemsize, dtype)
    skip = (-raw.ctypes.data % align) // itemsize
    arr = raw[skip:skip + n]
    advise_huge_pages(arr, HUGE_PAGE)
    arr.fill(fill)
    return arr
