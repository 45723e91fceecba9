"""Fast WordPiece (exactly HF ``BertTokenizerFast``): the tokenizer object (tokenizer) and
streaming encode (stream).
"""
from corpustok.wordpiece.tokenizer import WordPiece

__all__ = ["WordPiece"]
