"""The pre-tokenizer split: the interpreter of compiled split patterns (interpreter), the
bit-parallel 64-byte rules of the named patterns (fast) and their byte-range masks (byte_masks).
"""
