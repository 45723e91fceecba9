"""Installed as ``corpustok.kernels`` (``setup.py`` maps this folder; ``corpustok/kernels`` links here).

Numba kernels over flat numpy arrays: no Python objects, no I/O, no Beam."""
