"""What every corpustok tokenizer offers: the :class:`Tokenizer` protocol.

The pipeline, the report and the CLI are written against this protocol, not against a class,
so a new model (another BPE family, a Unigram model) plugs in by offering these methods.
:class:`~corpustok.wordpiece.tokenizer.WordPiece` and :class:`~corpustok.bpe.tokenizer.BytePairTokenizer` satisfy
it structurally (``isinstance(tok, Tokenizer)`` is checked in the tests).
"""
from typing import Optional, Protocol, Sequence, runtime_checkable

import numpy as np
import pyarrow as pa

from corpustok.arrow import Utf8Batch

FILE_FORMAT = "corpustok"  # value of the "format" key in corpustok tokenizer files


@runtime_checkable
class TokenStream(Protocol):
    """Incremental encoding: the ids of every ``feed`` plus ``finish`` equal ``encode`` of the
    concatenated text, however it was cut."""

    def feed(self, text: str) -> list: ...

    def finish(self) -> list: ...


@runtime_checkable
class Tokenizer(Protocol):
    """A tokenizer over whole batches: one kernel call per batch of documents."""

    @property
    def vocab_size(self) -> int: ...

    def token_to_id(self, token: str) -> Optional[int]: ...

    def id_to_token(self, i: int) -> Optional[str]: ...

    def encode(self, text: str) -> list:
        """Ids of one text (no special tokens added around it)."""

    def encode_batch(self, texts) -> pa.ListArray:
        """int32 ids of each text of a list of str or an Arrow string array; null -> null."""

    def encode_arrays(self, batch: Utf8Batch, *, threads: int = 1
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ids int32, offsets int64 [n+1], replaced int64 [n])`` of a UTF-8 batch: the
        form the pipeline writes; ``replaced`` counts U+FFFD substitutions per document.
        ``threads`` > 1 runs document ranges in that many threads, with the same result."""

    def stream(self) -> TokenStream:
        """An incremental encoder (bounded memory for documents of any size)."""

    def decode(self, ids: Sequence[int]) -> str: ...

    def decode_batch(self, lists) -> list: ...

    def to_dict(self) -> dict:
        """The corpustok file document (``save`` writes it as JSON; ``corpustok.load`` reads it)."""

    def save(self, path) -> None: ...


class WholeTextStream:
    """A :class:`TokenStream` that holds the text (memory: the document) and encodes it whole
    at :meth:`finish` with ``tok.encode``'s ids: for a BPE tokenizer whose pre-tokenizer runs
    in Python (a regex of unknown shape gives no bound on how far a chunk may still change)
    and for the SentencePiece family, ``.model`` and ``tokenizer.json`` (its BPE may merge
    across any cut). The job streams a document past ``--max-doc-mb`` through it."""

    def __init__(self, tok, recognize_special=False):
        self._tok = tok
        self._recognize = recognize_special
        self._pieces = []

    def feed(self, text):
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        self._pieces.append(text)
        return []

    def finish(self):
        text, self._pieces = "".join(self._pieces), []
        return self._tok.encode(text, recognize_special=self._recognize)
