"""Numba's inliner copies a callee's IR block by block; this makes it one copy per IR.

``inline="always"`` (decision 0017) has Numba's ``InlineWorker.inline_ir`` copy the callee's
IR twice per call site, each block with its own ``copy.deepcopy``. Every variable of a block
deep-copies the function's scope, which holds every variable of the function, so each block
copies the whole scope again: the copy grows with blocks times variables, and the split's
interpreter, inlined five levels deep (``_run`` into ``_body`` into ``_branch`` into
``_match`` into ``chunk_end`` into ``split_some``), spent most of its compile time there
(numba/numba#8989; 2026-12-07: GPT-2's split 22-23 s of CPU to compile, 15-16 s with this).

:func:`install` makes the block copies of one IR share one ``deepcopy`` memo, for callees
defined in corpustok's own modules only (a user's other Numba code is inlined as Numba does
it): the copy is then what one ``deepcopy`` of all the blocks gives (one scope, variables
shared between blocks as in the callee), and the compiled machine code is the same
(``tests/core/test_inline_copies.py``). Numba's own code runs unchanged: ``inline_ir`` is
wrapped and the ``copy`` module its copies go through is replaced by one whose ``deepcopy``
passes a memo for a block when a wrapped call is under way. A block met again in its memo
(the same IR copied twice in one call, which Numba 0.68 does not do) starts a new memo, so
two copies never share a block. ``CORPUSTOK_NUMBA_INLINE_COPY=0`` (or ``false``, ``off``,
``no``) turns it off; a Numba whose inliner no longer copies through the ``copy`` module is
left alone.
"""
import copy
import functools
import os
import threading
import types

# Numba imports the inliner's module anyway in every process that loads a cached kernel
from numba.core import inline_closurecall, ir

ENV = "CORPUSTOK_NUMBA_INLINE_COPY"
OFF = ("0", "false", "off", "no")
OURS = ("corpustok.",)  # modules whose inlined functions share a memo per copied IR
_state = threading.local()  # .memos: {id(scope): memo} while our callee is inlined, else None


def _deepcopy(x, memo=None):
    """``copy.deepcopy``, with one memo per scope for Numba IR blocks while our callee is
    inlined: the blocks of one IR share its scope, and a copy of a copy has the copied scope,
    so the two copies of one ``inline_ir`` call never share a memo; a block already copied
    with its scope's memo (a second copy of the same IR) starts a new one."""
    memos = getattr(_state, "memos", None)
    if memo is None and memos is not None and isinstance(x, ir.Block):
        memo = memos.get(id(x.scope))
        if memo is None or id(x) in memo:
            memo = memos[id(x.scope)] = {}
    return copy.deepcopy(x, memo)


# the copy module as Numba's inliner sees it
_SHARED_MEMO_COPY = types.SimpleNamespace(copy=copy.copy, deepcopy=_deepcopy, Error=copy.Error)


def _ours(callee_ir):
    func = getattr(getattr(callee_ir, "func_id", None), "func", None)
    return getattr(func, "__module__", "").startswith(OURS)


def install():
    """Install the shared memo once per process; returns whether it is in place."""
    if os.environ.get(ENV, "1").strip().lower() in OFF:
        return False
    worker = getattr(inline_closurecall, "InlineWorker", None)
    inline_ir = getattr(worker, "inline_ir", None)
    if getattr(inline_ir, "_corpustok_shared_memo", False):
        return True
    if inline_ir is None or getattr(inline_closurecall, "copy", None) is not copy:
        return False  # another Numba than the one this was written against

    @functools.wraps(inline_ir)
    def shared_memo_inline_ir(self, caller_ir, block, i, callee_ir, *args, **kwargs):
        outer = getattr(_state, "memos", None)
        _state.memos = {} if _ours(callee_ir) else None
        try:
            return inline_ir(self, caller_ir, block, i, callee_ir, *args, **kwargs)
        finally:
            _state.memos = outer

    shared_memo_inline_ir._corpustok_shared_memo = True
    inline_closurecall.copy = _SHARED_MEMO_COPY
    worker.inline_ir = shared_memo_inline_ir
    return True


INSTALLED = install()
