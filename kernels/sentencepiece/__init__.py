"""Numba kernels of the SentencePiece family (issue 46): :mod:`.bpe` encodes SentencePiece BPE
with byte fallback (Llama 2, Mistral v0.x, Gemma); :mod:`.normalize` (the charsmap normalizer),
:mod:`.unigram` (the Unigram Viterbi) and :mod:`.trie` (their byte trie) run T5, mT5, ALBERT."""
