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
