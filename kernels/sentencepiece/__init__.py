"""SentencePiece kernels (normalizer, Unigram, BPE) over flat arrays."""
