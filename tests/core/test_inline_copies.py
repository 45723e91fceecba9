"""Numba's inliner with one deepcopy memo per copied IR (``kernels/inline_copies.py``): in place
after any kernel import, taken for our modules' callees only, and the machine code it gives is
the code Numba's own block-by-block copies give."""
import copy
import re

import numpy as np
import pytest
from numba import njit
from numba.core import inline_closurecall, ir

import corpustok.kernels  # noqa: F401  (installs it)
from corpustok.kernels import inline_copies

pytestmark = pytest.mark.skipif(not inline_copies.INSTALLED,
                                reason=f"turned off by {inline_copies.ENV}")


def _family():
    """A kernel over nested ``inline="always"`` helpers, a helper inlined at two sites, loops
    and branches in each (new dispatchers on every call, so each compiles afresh)."""

    @njit(inline="always")
    def leaf(a, i):
        s = 0
        for j in range(i, min(i + 4, len(a))):
            if a[j] & 1:
                s += a[j]
            else:
                s -= j
        return s

    @njit(inline="always")
    def mid(a, i):
        x = leaf(a, i)
        y = leaf(a, i + 2)  # a second site of the same helper
        return x * 3 + y if x > y else y - x

    @njit(inline="always")
    def top(a, i):
        t = mid(a, i)
        while t > 100:
            t //= 2
        return t

    @njit
    def kernel(a):
        total = 0
        for i in range(len(a)):
            total += top(a, i)
        return total

    return kernel


def _asm(kernel, a):
    """The kernel's result on ``a`` and its instructions, with the mangled names of functions
    (which carry each dispatcher's own number), the debug directives and the data directives
    (strings naming functions, and their sizes) removed."""
    result = kernel(a)
    asm = re.sub(r"_ZN\S*", "", kernel.inspect_asm(kernel.signatures[0]))
    lines = [line for line in asm.splitlines() if line.strip() and
             not line.lstrip().startswith((".file", ".loc", ".section", "#", ".ident", ".size",
                                           ".asciz", ".ascii", ".string"))]
    assert len(lines) > 50
    return result, lines


def _block_copies(monkeypatch):
    """The inliner's block copies as they happen: ``own`` counts those with a memo of their
    own, ``scopes`` maps each shared memo to the scopes of the blocks copied with it."""
    seen = {"own": 0, "scopes": {}}
    deepcopy = copy.deepcopy

    def spied(x, memo=None):
        y = deepcopy(x, memo)
        if isinstance(x, ir.Block):
            if memo is None:
                seen["own"] += 1
            else:
                seen["scopes"].setdefault(id(memo), set()).add(id(y.scope))
        return y

    monkeypatch.setattr(copy, "deepcopy", spied)
    return seen


def test_installed_once_after_a_kernel_import():
    assert inline_copies.INSTALLED
    assert inline_closurecall.copy.deepcopy is inline_copies._deepcopy
    wrapped = inline_closurecall.InlineWorker.inline_ir
    assert inline_copies.install() and inline_closurecall.InlineWorker.inline_ir is wrapped
    assert wrapped.__wrapped__.__module__ == "numba.core.inline_closurecall"


def test_the_same_machine_code_as_numbas_own_copies(monkeypatch):
    a = np.arange(-50, 200, dtype=np.int64) * 7 % 23
    seen = _block_copies(monkeypatch)
    monkeypatch.setattr(inline_copies, "OURS", (__name__,))
    shared = _asm(_family(), a)
    # every inlined IR copied with one memo, its blocks with one scope (Numba: one a block)
    assert seen["own"] == 0 and seen["scopes"]
    assert all(len(scopes) == 1 for scopes in seen["scopes"].values())
    monkeypatch.setattr(inline_copies, "OURS", ())  # Numba's own copies, block by block
    plain = _asm(_family(), a)
    assert seen["own"] > len(seen["scopes"])
    assert shared[0] == plain[0] == _family().py_func(a)
    assert shared[1] == plain[1]


def test_an_ir_copied_twice_in_one_call_gets_two_copies():
    """A block met again in its scope's memo starts a new memo: two copies of one IR made in
    one inlining never share a block (Numba 0.68 copies a copy, but another might not)."""
    blocks = [ir.Block(ir.Scope(None, ir.Loc("f", 1)), ir.Loc("f", 1))]
    scope = blocks[0].scope
    blocks.append(ir.Block(scope, ir.Loc("f", 2)))
    inline_copies._state.memos = {}
    try:
        first = [inline_closurecall.copy.deepcopy(b) for b in blocks]
        second = [inline_closurecall.copy.deepcopy(b) for b in blocks]
    finally:
        inline_copies._state.memos = None
    assert first[0].scope is first[1].scope is not scope  # one scope for one copy
    assert second[0].scope is second[1].scope
    assert not {id(b) for b in first} & {id(b) for b in second}
    assert second[0].scope is not first[0].scope


def test_other_modules_inline_as_numba_does(monkeypatch):
    seen = _block_copies(monkeypatch)
    assert not __name__.startswith(inline_copies.OURS)
    _family()(np.arange(10, dtype=np.int64))
    assert seen["own"] > 0 and not seen["scopes"]
