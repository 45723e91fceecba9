"""Numba kernels of the SentencePiece family (issue 46): :mod:`.bpe` encodes SentencePiece BPE
with byte fallback (Llama 2, Mistral v0.x, Gemma)."""
