"""Reading the inputs into documents: which files (``inputs``: arguments, globs, folders,
stdin, per-input columns), how (``spec``: ``ReadSpec``, kept columns), the reading units and
their readers (``units``: plan and dispatch; Parquet and JSONL readers; ``text``: plain
text), and what makes an input unreadable (``errors``). Readers yield ``batches.DocBatch``;
they report the bytes they read through the ``on_bytes`` callback the job passes in."""
