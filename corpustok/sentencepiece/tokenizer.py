"""SentencePieceTokenizer: a SentencePiece ``.model`` (BPE or Unigram), exactly as
``sentencepiece`` encodes and decodes it (decision 0033).

The file is read by :mod:`corpustok.sentencepiece.model_file` (no ``protobuf`` or
``sentencepiece`` at run time). A BPE model is encoded by the Numba kernel of
:mod:`corpustok.kernels.sentencepiece.bpe` (tables and batch call in
:mod:`corpustok.sentencepiece.bpe`, decision 0034); a Unigram model by the charsmap
normalizer and the float32 Viterbi of :mod:`corpustok.kernels.sentencepiece.normalize` and
``.unigram`` (state built in :mod:`corpustok.sentencepiece.normalizer` and ``.unigram``,
decision 0035); :mod:`corpustok.sentencepiece.reference` stays the readable reference of
both. ``encode`` is ``SentencePieceProcessor.encode(text)`` with default options: no
``<s>``/``</s>`` added, and control-token text such as ``"<s>"`` in the input is plain text,
as in sentencepiece.
"""
import base64
import json
from functools import cached_property

import numpy as np

from corpustok.tokenizer import FILE_FORMAT, WholeTextStream
from corpustok.arrow import id_array, id_lists, list_array, replace_surrogates, utf8_batch
from corpustok.sentencepiece.bpe import SentencePieceBpe
from corpustok.sentencepiece.model_file import (BPE, CONTROL, UNIGRAM, UNKNOWN, USER_DEFINED,
                                                parse_model)
from corpustok.sentencepiece import reference as ref
from corpustok.sentencepiece.normalizer import normalizer_state
from corpustok.sentencepiece.unigram import encode_unigram, unigram_state
from corpustok.parallel import ThreadPools, check_threads

__all__ = ["SentencePieceTokenizer"]


class SentencePieceTokenizer:
    """A SentencePiece model. Build it with :meth:`from_file` (a ``.model``), or
    ``corpustok.load(path)``, which recognises the file by content."""

    def __init__(self, data, source="a SentencePiece model"):
        self._data = bytes(data)
        self._model = parse_model(self._data, source)
        self._index = {p: i for i, p in reversed(list(enumerate(self._model.pieces)))}
        self._kernel = (SentencePieceBpe(self._model)
                        if self._model.trainer["model_type"] == BPE else None)
        self._unigram = None
        if self._model.trainer["model_type"] == UNIGRAM:
            self._unigram = (normalizer_state(self._model), unigram_state(self._model))
        self._pools = ThreadPools()

    @classmethod
    def from_file(cls, path):
        with open(path, "rb") as f:
            return cls(f.read(), str(path))

    @cached_property
    def _vocab(self):
        """The reference's lookup tables (:class:`corpustok.sentencepiece.reference.Vocab`:
        decoding, and models without a kernel), made on first use: 0.4 s of a load of
        Gemma's 256,000 pieces that a tokenize job never needs."""
        return ref.Vocab(self._model)

    # ---- vocabulary -------------------------------------------------------------------------
    @property
    def model(self):
        """The parsed file (:class:`corpustok.sentencepiece.model_file.SentencePieceModel`)."""
        return self._model

    @property
    def model_type(self):
        return self._model.model_type  # "BPE" or "UNIGRAM"

    @property
    def vocab_size(self):
        return len(self._model.pieces)

    def token_to_id(self, token):
        """Id of a piece string (spaces written as U+2581), or None."""
        return self._index.get(token)

    def id_to_token(self, i):
        return self._model.pieces[i] if isinstance(i, (int, np.integer)) and \
            0 <= i < self.vocab_size else None

    @property
    def special_tokens(self):
        """The control and unknown pieces (``<unk>``, ``<s>``, ``</s>``, ``<pad>``...), by id."""
        t = self._model.types
        return [self._model.pieces[i] for i in np.flatnonzero((t == CONTROL) | (t == UNKNOWN))]

    @property
    def user_defined_tokens(self):
        return [self._model.pieces[i] for i in np.flatnonzero(self._model.types == USER_DEFINED)]

    def _spec_id(self, name):
        i = self._model.trainer[name + "_id"]
        return i if 0 <= i < self.vocab_size else None

    @property
    def unk_id(self):
        return int(np.flatnonzero(self._model.types == UNKNOWN)[0])

    @property
    def bos_id(self):
        return self._spec_id("bos")

    @property
    def eos_id(self):
        return self._spec_id("eos")

    @property
    def pad_id(self):
        return self._spec_id("pad")

    # ---- encoding ---------------------------------------------------------------------------
    def encode(self, text, *, recognize_special=False):
        """Ids of one text, as ``sentencepiece``'s ``encode(text)`` (a lone surrogate, which
        sentencepiece refuses, is U+FFFD as everywhere in corpustok)."""
        _no_special(recognize_special)
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if self._kernel is not None or self._unigram is not None:
            ids, _, _ = self.encode_arrays(utf8_batch([text]))
            return ids.tolist()
        return ref.encode_bytes(self._vocab, replace_surrogates(text)[0])

    def encode_arrays(self, batch, *, recognize_special=False, threads=1):
        """``(ids int32, offsets int64 [n+1], replaced int64 [n])`` of a
        :class:`~corpustok.Utf8Batch`; ``replaced`` counts the U+FFFD that invalid bytes
        became (one per byte, sentencepiece's rule) and the lone surrogates of ``str`` input.
        ``threads``: the kernels run parts of the batch in that many threads (same ids)."""
        _no_special(recognize_special)
        check_threads(threads)
        if self._kernel is not None or self._unigram is not None:
            data = batch.data

            def part(offs):
                if self._unigram is not None:
                    return encode_unigram(*self._unigram, data, offs)
                return self._kernel.encode_arrays(data, offs)

            ids, offsets, replaced = self._pools.run(part, batch.offsets, threads)
            if batch.replaced is not None:
                replaced = replaced + batch.replaced
            return ids, offsets, replaced
        n = len(batch)
        data, offs = batch.data, batch.offsets
        ids, counts = [], np.zeros(n + 1, np.int64)
        replaced = np.zeros(n, np.int64) if batch.replaced is None else \
            batch.replaced.astype(np.int64).copy()
        for j in range(n):
            raw = data[offs[j]:offs[j + 1]].tobytes()
            if not batch.well_formed:
                replaced[j] += ref.invalid_bytes(raw)
            out = ref.encode_bytes(self._vocab, raw)
            ids.extend(out)
            counts[j + 1] = len(out)
        return np.array(ids, np.int32), np.cumsum(counts), replaced

    def encode_batch(self, texts, *, recognize_special=False, threads=1):
        """int32 ids of each text (a list of ``str``/None or an Arrow string array) as a
        ``pyarrow.ListArray``; null texts give null lists."""
        _no_special(recognize_special)
        batch = utf8_batch(texts)
        ids, offsets, _ = self.encode_arrays(batch, threads=threads)
        return list_array(offsets, ids, batch.valid)

    def stream(self):
        return WholeTextStream(self)

    # ---- decoding ---------------------------------------------------------------------------
    def _ids(self, ids, where=""):
        arr = id_array(ids)
        bad = (arr < 0) | (arr >= self.vocab_size)
        if bad.any():
            raise ValueError(f"{where}id {int(arr[bad][0])} is outside the vocabulary "
                             f"(0..{self.vocab_size - 1})")
        return arr.tolist()

    def decode(self, ids):
        """Text of ids, as ``sentencepiece``'s ``decode``: control pieces vanish, the unknown
        id reads " \u2047 ", byte pieces are reassembled (an invalid byte is U+FFFD), U+2581 is a
        space and the dummy prefix's space is dropped."""
        return ref.decode(self._vocab, self._ids(ids))

    def decode_batch(self, lists):
        """Texts of an Arrow list array of ids (or a list of id lists); null lists give None."""
        ids, offsets, valid = id_lists(lists)
        ids = self._ids(ids)
        return [None if valid is not None and not valid[j] else
                ref.decode(self._vocab, ids[offsets[j]:offsets[j + 1]])
                for j in range(len(offsets) - 1)]

    # ---- files ------------------------------------------------------------------------------
    def to_dict(self):
        """A corpustok file: the ``.model`` bytes, base64 (the model file is the truth)."""
        return {"format": FILE_FORMAT, "type": "sentencepiece",
                "model": base64.b64encode(self._data).decode("ascii")}

    @classmethod
    def from_dict(cls, d):
        model = d.get("model")
        if not isinstance(model, str):
            raise ValueError("a sentencepiece tokenizer file holds the .model bytes as "
                             "base64 under \"model\"")
        try:
            data = base64.b64decode(model, validate=True)
        except ValueError:
            raise ValueError("\"model\" is not base64") from None
        return cls(data)

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f)

    def __getstate__(self):
        return {"data": self._data}

    def __setstate__(self, d):
        self.__init__(d["data"])

    def __repr__(self):
        return (f"SentencePieceTokenizer(model_type={self.model_type!r}, "
                f"vocab_size={self.vocab_size}, byte_fallback={self._model.byte_fallback}, "
                f"normalizer={self._model.normalizer['name']!r})")


def _no_special(recognize_special):
    if recognize_special:
        raise ValueError("control tokens written in the text (--special) are not read yet for "
                         "SentencePiece models; sentencepiece itself encodes them as text")
