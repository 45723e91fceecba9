"""64 bytes at a time: which of them fall in a byte range, as the bits of one int64.

The bit-parallel split (:mod:`corpustok.kernels.split.fast`) classifies a window of text
with a few such masks instead of a branch per byte. Numba has no vector types, so this is an
intrinsic that writes the LLVM vector code itself: one unaligned 64-byte load, a subtract and
an unsigned compare of 64 lanes, the 64 results as an i64. The IR is target-independent; LLVM
picks the instructions (AVX-512 compares into a mask register, AVX2 compares and
``vpmovmskb``, NEON on ARM), so cached kernels stay correct wherever Numba compiles them.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

WINDOW = 64  # bytes a mask covers

__all__ = ["WINDOW", "range_mask"]


@intrinsic
def range_mask(typingctx, array, index, lo, hi):
    """Bit ``q`` (0 <= q < 64) of the int64 result is set when ``lo <= array[index + q] <=
    hi`` (unsigned bytes, ``0 <= lo <= hi <= 255``). ``array`` is a 1-d uint8 array whose
    elements ``index .. index + 63`` must all exist: this is not checked."""
    if not (isinstance(array, types.Array) and array.ndim == 1 and array.dtype == types.uint8
            and all(isinstance(t, types.Integer) for t in (index, lo, hi))):
        return None

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
        vector = ir.VectorType(i8, WINDOW)
        data = builder.load(builder.bitcast(ptr, vector.as_pointer()), align=1)

        def splat(value):
            lane = builder.insert_element(ir.Constant(vector, ir.Undefined), value,
                                          ir.Constant(i32, 0))
            return builder.shuffle_vector(lane, lane, ir.Constant(ir.VectorType(i32, WINDOW),
                                                                  [0] * WINDOW))

        lo8 = builder.trunc(context.cast(builder, args[2], signature.args[2], types.int64), i8)
        hi8 = builder.trunc(context.cast(builder, args[3], signature.args[3], types.int64), i8)
        inside = builder.icmp_unsigned("<=", builder.sub(data, splat(lo8)),
                                       splat(builder.sub(hi8, lo8)))
        return builder.bitcast(inside, i64)

    return types.int64(array, index, lo, hi), codegen
