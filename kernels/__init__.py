"""Numba kernels over flat numpy arrays: no Python objects, no I/O, no Beam."""
