"""Tokenizer files: recognising a file (recognize), reading JSON safely (json_file), HF and
GPT-2 files (hf), tiktoken rank files (tiktoken), writing an HF tokenizer.json (hf_export).
"""
