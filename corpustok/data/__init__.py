"""Training-time readers of corpustok's outputs (and, as files, the package's embedded data)."""
from corpustok.packed import PackedSequences

__all__ = ["PackedSequences"]
