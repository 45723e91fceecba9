"""Installed as ``corpustok.kernels`` (``setup.py`` maps this folder; a checkout finds it beside ``corpustok/``).

Numba kernels over flat numpy arrays: no Python objects, no I/O, no Beam."""

# before any kernel compiles: Numba's inliner copies our callees' IR once, not block by block
from corpustok.kernels import inline_copies as _inline_copies  # noqa: E402,F401
