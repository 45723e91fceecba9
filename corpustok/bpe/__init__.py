"""Byte-level BPE: the tokenizer object (tokenizer), streaming encode and decode (stream),
its per-thread chunk caches (caches), the tables built from a vocabulary (tables) and training
(train).
"""
from corpustok.bpe.tokenizer import BytePairTokenizer

__all__ = ["BytePairTokenizer"]
