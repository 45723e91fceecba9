"""What the two SentencePiece-style ``tokenizer.json`` classes share (BPE:
:class:`~corpustok.sentencepiece.hf_json.HfSentencePieceTokenizer`, Unigram:
:class:`~corpustok.sentencepiece.hf_unigram.HfUnigramTokenizer`): the file's added tokens
(their ids in the text, cut out before the model runs, as HF ``tokenizers`` does), the
vocabulary look-ups, the batch plumbing around a subclass's ``_encode_part`` and ``_decode``,
and the document as the file to save."""
import copy
import json

import numpy as np

from corpustok.arrow import freeze_arrays, id_array, id_lists, list_array, pool_array, \
    read_only, utf8_batch
from corpustok.kernels.sentencepiece.added import cut_added
from corpustok.parallel import ThreadPools, check_threads
from corpustok.sentencepiece.bpe import _user_trie
from corpustok.tokenizer import WholeTextStream


def join_segments(ids, seg_off, added, doc_first):
    """``(ids int32, offsets int64 [n+1])`` of documents from the ids of their text segments
    (``ids``, ``seg_off`` over the segments with ``added[s] < 0``, in order) and the added
    tokens' ids (``added[s] >= 0``); ``doc_first``: each document's first segment.
    Without an added token the documents' ids are ``ids`` itself (no copy); else a new array
    in Arrow's pool (decision 0046)."""
    n_seg = len(added)
    is_added = added >= 0
    if not is_added.any():
        off = np.asarray(seg_off, np.int64)
        return ids, (off - off[0])[doc_first]
    counts = np.zeros(n_seg, np.int64)
    counts[~is_added] = np.diff(seg_off)
    counts[is_added] = 1
    out_off = np.zeros(n_seg + 1, np.int64)
    np.cumsum(counts, out=out_off[1:])
    out = pool_array(out_off[-1])
    at_added = np.zeros(len(out), bool)
    at_added[out_off[:-1][is_added]] = True
    out[at_added] = added[is_added]
    out[~at_added] = ids
    return out, out_off[doc_first]


class HfJsonTokenizer:
    """The base of a tokenizer.json class. A subclass's ``__init__`` checks the document,
    builds its model, then calls :meth:`_read_added` with its token strings (None at unused
    ids); it defines ``_encode_part(data, offsets, well_formed)`` (ids, offsets, replaced of
    one part of a batch), ``_decode(ids, skip_special_tokens)``, ``unk_id`` and ``__repr__``."""

    def _read_added(self, doc, tokens):
        """The document and its added tokens: ``_added`` (content -> id), ``_special`` (the
        contents of special ones: HF skips a decoded token whose text is one), the trie that
        cuts them out of a text, and the vocabulary's look-ups."""
        self._doc = doc
        self._tokens = tokens
        self._added = {}
        self._special = set()
        for t in doc.get("added_tokens") or []:
            self._added[t["content"]] = t["id"]
            if t.get("special"):
                self._special.add(t["content"])
        raw = [(c.encode(), i) for c, i in self._added.items() if c]
        self._added_trie = freeze_arrays(tuple(_user_trie(raw))) if raw else None
        self._id_token = {i: c for c, i in self._added.items()}
        self._vocab_size = max([len(tokens)] + [i + 1 for i in self._added.values()])
        self._index = {t: i for i, t in enumerate(tokens) if t is not None}
        self._index.update(self._added)
        self._pools = ThreadPools()

    @classmethod
    def from_file(cls, path):
        with open(path, encoding="utf-8") as f:
            return cls(json.load(f), str(path))

    @classmethod
    def _from_hf_doc(cls, path, doc):
        return cls(doc, str(path))

    # ---- vocabulary -------------------------------------------------------------------------
    @property
    def vocab_size(self):
        """Ids of the model and the added tokens (HF's ``get_vocab_size()``)."""
        return self._vocab_size

    def token_to_id(self, token):
        return self._index.get(token)

    def id_to_token(self, i):
        if not isinstance(i, (int, np.integer)):
            return None
        i = int(i)
        if i in self._id_token:
            return self._id_token[i]
        return self._tokens[i] if 0 <= i < len(self._tokens) else None

    @property
    def special_tokens(self):
        return sorted(self._special, key=lambda t: self._added[t])

    # ---- encoding ---------------------------------------------------------------------------
    def encode(self, text, *, recognize_special=False):
        """Ids of one text, as HF's ``encode(text, add_special_tokens=False).ids`` (a lone
        surrogate is U+FFFD as everywhere in corpustok). Added tokens in the text are always
        their ids, as in ``tokenizers``: ``recognize_special`` changes nothing."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        ids, _, _ = self.encode_arrays(utf8_batch([text]))
        return ids.tolist()

    def stream(self):
        """An incremental encoder (:class:`~corpustok.tokenizer.WholeTextStream`: the
        text held and encoded whole at the end, :meth:`encode`'s ids). A tokenize job streams a
        document past ``--max-doc-mb`` through it; without it such a job failed."""
        return WholeTextStream(self)

    def _segments(self, data, offsets):
        """Cut each document at its added tokens (:func:`cut_added`): ``(cuts int64, added
        int32, doc_first int64 [n+1])``."""
        if self._added_trie is None:
            n = len(offsets) - 1
            return (np.asarray(offsets, np.int64), np.full(n, -1, np.int32),
                    np.arange(n + 1, dtype=np.int64))
        return cut_added(read_only(data), np.asarray(offsets, np.int64), *self._added_trie)

    def encode_arrays(self, batch, *, recognize_special=False, threads=1):
        """``(ids int32, offsets int64 [n+1], replaced int64 [n])`` of a
        :class:`~corpustok.Utf8Batch` (invalid bytes become U+FFFD, counted in ``replaced``
        with the lone surrogates of ``str`` input). ``threads``: parts of the batch in that
        many threads (same ids)."""
        check_threads(threads)
        data = read_only(np.ascontiguousarray(batch.data, np.uint8))
        well_formed = bool(batch.well_formed)

        def part(offs):
            return self._encode_part(data, offs, well_formed)

        ids, offsets, replaced = self._pools.run(part, batch.offsets, threads)
        if batch.replaced is not None:
            replaced = replaced + batch.replaced
        return ids, offsets, replaced

    def encode_batch(self, texts, *, recognize_special=False, threads=1):
        """int32 ids of each text (a list of ``str``/None or an Arrow string array) as a
        ``pyarrow.ListArray``; null texts give null lists."""
        batch = utf8_batch(texts)
        ids, offsets, _ = self.encode_arrays(batch, threads=threads)
        return list_array(offsets, ids, batch.valid)

    # ---- decoding ---------------------------------------------------------------------------
    def _ids(self, ids):
        arr = id_array(ids)
        bad = (arr < 0) | (arr >= self.vocab_size)
        if bad.any():
            raise ValueError(f"id {int(arr[bad][0])} is outside the vocabulary "
                             f"(0..{self.vocab_size - 1})")
        return arr.tolist()

    def _tokens_of(self, ids, skip_special_tokens):
        """The token strings of ids, special added tokens' texts left out when skipped (as
        HF's ``decode`` filters: by the token's text)."""
        tokens = (self.id_to_token(i) for i in ids)
        return [t for t in tokens if t is not None and
                not (skip_special_tokens and t in self._special)]

    def decode(self, ids, *, skip_special_tokens=True):
        """Text of ids, as HF's ``decode(ids)``: special added tokens skipped (unless
        ``skip_special_tokens=False``), then the file's decoder. An id outside the
        vocabulary is a ValueError (HF drops it)."""
        return self._decode(self._ids(ids), skip_special_tokens)

    def decode_batch(self, lists, *, skip_special_tokens=True):
        """Texts of an Arrow list array of ids (or a list of id lists); null lists give None."""
        ids, offsets, valid = id_lists(lists)
        ids = self._ids(ids)
        return [None if valid is not None and not valid[j] else
                self._decode(ids[offsets[j]:offsets[j + 1]], skip_special_tokens)
                for j in range(len(offsets) - 1)]

    # ---- files ------------------------------------------------------------------------------
    def to_dict(self):
        """The tokenizer.json document itself (the file is the truth; ``corpustok.load``
        reads it back)."""
        return copy.deepcopy(self._doc)

    def save(self, path):
        """Write the tokenizer.json document (loads back with ``corpustok.load``)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self._doc, f, ensure_ascii=False)

    def __getstate__(self):
        return {"doc": self._doc}

    def __setstate__(self, d):
        self.__init__(d["doc"])
