"""Byte-level BPE: corpustok/bpe/ and kernels/bpe/ (encode, decode, stream, train, long tokens)."""
