"""The SentencePiece family's ``stream()``: the text held, encoded whole at the end."""


class HeldStream:
    """Incremental encoding for the SentencePiece family, ``.model`` and ``tokenizer.json``:
    BPE without a pre-tokenizer may merge across any boundary, and no Unigram encoder here
    streams, so the text is held (memory: the document) and encoded whole at :meth:`finish`,
    with ``tok.encode``'s ids. The job streams a document past ``--max-doc-mb`` through it."""

    def __init__(self, tok):
        self._tok, self._parts = tok, []

    def feed(self, text):
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        self._parts.append(text)
        return []

    def finish(self):
        text, self._parts = "".join(self._parts), []
        return self._tok.encode(text)
