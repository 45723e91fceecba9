"""Installed as ``corpustok.kernels`` (``setup.py`` maps this folder; a checkout finds it beside ``corpustok/``).

Numba kernels over flat numpy arrays: no Python objects, no I/O, no Beam."""
