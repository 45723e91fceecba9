"""Byte-level BPE kernels: the pair table and merge (merge, premerge), the batch encoder with its
chunk cache (encode, chunk, cache), decoding (decode), the token table of symbol strings
(token_table), and training (chunk_count, learn).
"""
