"""Numba's inliner with one deepcopy memo per copied IR (``kernels/inline_copies.py``): in place
after any kernel import, taken for our modules' callees only, and the machine code it gives is
the code Numba's own block-by-block copies give."""
import copy
import re

import numpy as np
from numba import njit
from numba.core import inline_closurecall, ir

import corpustok.kernels  # noqa: F401  (installs it)
from corpustok.kernels import inline_copies


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
    """The kernel's result on ``a`` and its assembly with symbol names and addresses removed."""
    result = kernel(a)
    asm = kernel.inspect_asm(kernel.signatures[0])
    asm = re.sub(r"_ZN\S*|\b0x[0-9a-f]+\b|\.L\w+|\b[0-9a-f]{8,}\b", "", asm)
    return result, [line for line in asm.splitlines() if line.strip() and
                    not line.lstrip().startswith((".file", ".loc", ".section", "#"))]


def _block_copies(monkeypatch):
    """Counts of the inliner's block copies: with a shared memo, and without one."""
    counts = {"shared": 0, "own": 0}
    deepcopy = copy.deepcopy

    def counted(x, memo=None):
        if isinstance(x, ir.Block):
            counts["own" if memo is None else "shared"] += 1
        return deepcopy(x, memo)

    monkeypatch.setattr(copy, "deepcopy", counted)
    return counts


def test_installed_once_after_a_kernel_import():
    assert inline_copies.INSTALLED
    assert inline_closurecall.copy.deepcopy is inline_copies._deepcopy
    wrapped = inline_closurecall.InlineWorker.inline_ir
    assert inline_copies.install() and inline_closurecall.InlineWorker.inline_ir is wrapped
    assert wrapped.__wrapped__.__module__ == "numba.core.inline_closurecall"


def test_the_same_machine_code_as_numbas_own_copies(monkeypatch):
    a = np.arange(-50, 200, dtype=np.int64) * 7 % 23
    counts = _block_copies(monkeypatch)
    monkeypatch.setattr(inline_copies, "OURS", (__name__,))
    shared = _asm(_family(), a)
    assert counts["shared"] > 0 and counts["own"] == 0
    monkeypatch.setattr(inline_copies, "OURS", ())  # Numba's own copies, block by block
    plain = _asm(_family(), a)
    assert counts["own"] > 0
    assert shared[0] == plain[0] == _family().py_func(a)
    assert shared[1] == plain[1]


def test_other_modules_inline_as_numba_does(monkeypatch):
    counts = _block_copies(monkeypatch)
    assert not __name__.startswith(inline_copies.OURS)
    _family()(np.arange(10, dtype=np.int64))
    assert counts["own"] > 0 and counts["shared"] == 0
