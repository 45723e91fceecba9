"""A software prefetch for jitted code: ask for an array element's cache line ahead of its use.

BPE merging reads a pair table of several MB at addresses known only one merge ahead, so
each merge would otherwise wait for memory; a prefetch issued when a pair's rank is read
fetches the lines the merge of that pair will read (decision 0010). A prefetch never
faults and never changes a result, so a wrong guess costs only the bandwidth.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    """Hint that ``array[index]`` (a 1-d array, an in-bounds integer index: it is not
    checked) will be read soon: LLVM's ``llvm.prefetch`` (read, keep in all cache levels)."""
    if not isinstance(array, types.Array) or array.ndim != 1 or \
            not isinstance(index, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        i32 = ir.IntType(32)
        byte_ptr = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, byte_ptr), ir.Constant(i32, 0),
                          ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen
