"""SentencePiece models (``.model`` files): Llama 2, Mistral v0.x, Gemma (BPE with byte
fallback) and T5, mT5, ALBERT (Unigram).

- :mod:`.model_file`: our reader of the ``ModelProto`` fields the encoders use (no protobuf).
- :mod:`.reference`: the readable pure-Python encoders, exact against ``sentencepiece`` 0.2.3.
- :mod:`.tokenizer`: :class:`SentencePieceTokenizer`, the object ``corpustok.load`` returns.
"""
from corpustok.sentencepiece.tokenizer import SentencePieceTokenizer

__all__ = ["SentencePieceTokenizer"]
