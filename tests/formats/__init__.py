"""Tokenizer files: corpustok/formats/ (recognition, HF, tiktoken, Tekken, export) and the modern vocabularies."""
