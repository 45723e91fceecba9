"""Byte-level BPE training: chunk counting, then merges identical to HF ``BpeTrainer``.

Training runs in two stages so that the expensive one can be distributed:

1. :func:`count_chunks` (or :class:`ChunkCounts`, mergeable; the Beam form is
   ``corpustok.pipeline.jobs.count.CountChunks``) counts the pre-tokenizer chunks (GPT-2's by
   default, any name or pattern of :mod:`corpustok.pretokenize.patterns`) of the texts. Counts are substrate independent: one count serves ``ube``, ``utf8`` and ``utf16``.
2. :func:`train_from_counts` maps each chunk to the substrate's base symbols and learns merges
   exactly as HF ``BpeTrainer(initial_alphabet=<substrate alphabet>, vocab_size,
   min_frequency, special_tokens)`` would on the chunks' symbol strings with no normalizer
   and no pre-tokenizer: ids are the special tokens, then the whole alphabet sorted by code
   point, then merged tokens in creation order; the most frequent pair (overlapping windows
   counted) wins, ties go to the smallest ``(left_id, right_id)``. In the classic
   ``{"low": 5, "lower": 2, "newest": 6, "widest": 3}`` walkthrough the fifth merge is
   therefore ``e w`` (HF's rule), not the ``n e`` that Python ``Counter`` order gives.

Counts are int64 (HF stores pair counts as i32 and overflows past 2**31).
"""
from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from corpustok.arrow import utf8_batch
from corpustok.kernels.bpe.learn import learn_merges
from corpustok.kernels.bpe.chunk_count import count_add, count_batch
from corpustok.kernels.substrate import encode_symbols
from corpustok.pretokenize.patterns import resolve
from corpustok.vocab import string_list
from corpustok.substrate import alphabet, substrate_code

__all__ = ["ChunkCounts", "count_chunks", "train_from_counts", "train"]

BATCH_TEXTS = 4096  # texts per kernel call when the input is an iterable of str


class ChunkCounts:
    """A mergeable table chunk bytes -> count (the accumulator of chunk counting).

    ``add(texts)`` counts one batch (Arrow string/binary array or list of ``str``) with one
    kernel call; ``merge(other)`` adds another table; ``to_dict()`` gives ``{chunk: count}``.
    Pickles compactly (used arrays only), so it can travel between Beam workers.
    """

    def __init__(self, pretokenizer="gpt2"):
        self._program, _, self.pretokenizer = resolve(pretokenizer, python=False)
        self._slots = np.full(1 << 12, -1, np.int64)
        self._hashes = np.empty(1 << 11, np.uint64)
        self._counts = np.empty(1 << 11, np.int64)
        self._key_off = np.zeros(1 << 11, np.int64)
        self._keys = np.empty(1 << 14, np.uint8)
        self._n = 0

    def __len__(self):
        return self._n

    def _state(self):
        return (self._slots, self._hashes, self._counts, self._key_off, self._keys, self._n)

    def _set(self, state):
        (self._slots, self._hashes, self._counts, self._key_off, self._keys,
         self._n) = state

    def add(self, texts):
        """Count the chunks of a batch of texts; returns self."""
        batch = utf8_batch(texts)
        self._set(count_batch(batch.data, batch.offsets, self._program, *self._state()))
        return self

    def add_chunks(self, chunks, counts):
        """Add ``counts[i]`` to chunk ``chunks[i]`` (strings); returns self."""
        batch = utf8_batch(chunks)
        weights = np.asarray(counts, dtype=np.int64)
        if len(weights) != len(batch):
            raise ValueError(f"{len(batch)} chunks but {len(weights)} counts")
        self._set(count_add(batch.data, batch.offsets[:-1], batch.offsets[1:], weights,
                            *self._state()))
        return self

    def merge(self, other):
        """Add every count of ``other`` (a ChunkCounts of the same pre-tokenizer) to this
        table; returns self."""
        if other.pretokenizer != self.pretokenizer:
            raise ValueError(f"cannot merge chunks of pre-tokenizer {other.pretokenizer!r} "
                             f"into counts of {self.pretokenizer!r}")
        keys, key_off, counts = other.arrays()
        self._set(count_add(keys, key_off[:-1], key_off[1:], counts, *self._state()))
        return self

    def arrays(self):
        """``(keys uint8, key_off int64 [n+1], counts int64 [n])``: chunk ``e`` is the UTF-8
        ``keys[key_off[e]:key_off[e+1]]`` (invalid UTF-8 only when binary input had it)."""
        n = self._n
        key_off = self._key_off[:n + 1]
        return self._keys[:key_off[n]], key_off, self._counts[:n]

    def to_dict(self):
        """``{chunk: count}``; invalid UTF-8 chunks are decoded with U+FFFD and summed."""
        keys, key_off, counts = self.arrays()
        texts = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), self._n, [None, pa.py_buffer(key_off.copy()),
                                         pa.py_buffer(keys.copy())]).to_pylist()
        out = {}
        for raw, c in zip(texts, counts.tolist()):
            text = raw.decode("utf-8", "replace")
            out[text] = out.get(text, 0) + c
        return out

    def __getstate__(self):
        keys, key_off, counts = self.arrays()
        return {"keys": keys.copy(), "key_off": key_off.copy(), "counts": counts.copy(),
                "pretokenizer": self.pretokenizer}

    def __setstate__(self, state):
        self.__init__(state.get("pretokenizer", "gpt2"))
        key_off = state["key_off"]
        self._set(count_add(state["keys"], key_off[:-1], key_off[1:], state["counts"],
                            *self._state()))


def _batches(texts):
    """Kernel-sized batches: Arrow arrays pass through, ``str`` items are grouped."""
    if isinstance(texts, (pa.Array, pa.ChunkedArray)):
        yield texts
        return
    if isinstance(texts, str):
        raise TypeError("texts must be an iterable of str or Arrow arrays, got a single str; "
                        "wrap it in a list")
    pending = []
    for item in texts:
        if isinstance(item, (pa.Array, pa.ChunkedArray)):
            if pending:
                yield pending
                pending = []
            yield item
        elif item is None or isinstance(item, str):
            pending.append(item)
            if len(pending) >= BATCH_TEXTS:
                yield pending
                pending = []
        else:
            raise TypeError(f"texts must hold str or Arrow string arrays, got "
                            f"{type(item).__name__}")
    if pending:
        yield pending


def count_chunks(texts, *, into=None, pretokenizer="gpt2"):
    """Count the chunks of ``texts`` (an iterable of ``str`` and/or Arrow string arrays, or
    one Arrow array) split by ``pretokenizer`` (a name or pattern, see
    :mod:`corpustok.pretokenize.patterns`) into a :class:`ChunkCounts` (``into`` or a new one).

    Use ``.to_dict()`` on the result for ``{chunk: count}``; :func:`train_from_counts` takes
    either form.
    """
    counts = ChunkCounts(pretokenizer) if into is None else into
    for batch in _batches(texts):
        counts.add(batch)
    return counts


def _check_options(vocab_size, min_frequency, special_tokens):
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) \
            or vocab_size < 0:
        raise ValueError(f"vocab_size must be a non-negative int, got {vocab_size!r}")
    if isinstance(min_frequency, bool) or not isinstance(min_frequency, (int, np.integer)) \
            or min_frequency < 0:
        raise ValueError(f"min_frequency must be a non-negative int, got {min_frequency!r}")
    return string_list(special_tokens, "special_tokens")


def _learn(keys, key_off, counts, vocab_size, substrate, min_frequency, special_tokens):
    code = substrate_code(substrate)
    specials = _check_options(vocab_size, min_frequency, special_tokens)
    symbols = alphabet(substrate)
    index = {s: i for i, s in enumerate(symbols)}
    # HF ids: specials (first occurrence), then the alphabet by code point skipping strings
    # that a special token already holds.
    id_to_str = []
    str_to_id = {}
    for s in specials:
        if s not in str_to_id:
            str_to_id[s] = len(id_to_str)
            id_to_str.append(s)
    for s in sorted(symbols):
        if s not in str_to_id:
            str_to_id[s] = len(id_to_str)
            id_to_str.append(s)
    lut = np.array([str_to_id[s] for s in symbols], np.int64)
    seqs = [[index[ch] for ch in s] if all(ch in index for ch in s) else [] for s in id_to_str]
    tok_off = np.zeros(len(seqs) + 1, np.int64)
    np.cumsum([len(q) for q in seqs], out=tok_off[1:])
    tok_seq = np.array([x for q in seqs for x in q], np.int64)

    sym, word_off, _ = encode_symbols(keys, key_off, code)
    learned, tok_seq, tok_off = learn_merges(
        lut[sym], word_off, np.ascontiguousarray(counts, np.int64), tok_seq, tok_off,
        int(vocab_size), int(min_frequency))
    n_initial = len(id_to_str)
    seq_list = tok_seq.tolist()
    off = tok_off.tolist()
    for t in range(n_initial, len(off) - 1):
        id_to_str.append("".join(symbols[x] for x in seq_list[off[t]:off[t + 1]]))
    vocab = {s: i for i, s in enumerate(id_to_str)}
    left, right = learned["left"].tolist(), learned["right"].tolist()
    merges = [(id_to_str[a], id_to_str[b]) for a, b in zip(left, right)]
    return vocab, merges


def train_from_counts(counts, vocab_size, substrate="ube", min_frequency=0,
                      special_tokens=()):
    """``(vocab, merges)`` learned from chunk counts, identical to HF ``BpeTrainer``.

    ``counts``: a ``{chunk: count}`` mapping or a :class:`ChunkCounts`. ``vocab`` maps symbol
    strings to ids (first-alphabet byte ``b`` is GPT-2's ``bytes_to_unicode`` character,
    second-alphabet byte ``b`` is ``chr(0xE100 + b)``); ``merges`` lists ``(left, right)``
    symbol strings in creation order. Training stops at ``vocab_size`` entries (specials and
    the 256 or 512 symbol alphabet included), when no pair is left, or when the best count is
    below ``max(1, min_frequency)``. A merge whose string already exists keeps that id.
    Special tokens are never looked for in the chunks (keep them out of training text).
    """
    if isinstance(counts, ChunkCounts):
        keys, key_off, weights = counts.arrays()
    elif isinstance(counts, Mapping):
        batch = utf8_batch(list(counts.keys()))
        keys, key_off = batch.data, batch.offsets
        try:
            weights = np.array(list(counts.values()), dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            raise TypeError("counts must map str chunks to int counts") from None
        if len(weights) and weights.min() < 0:
            bad = next(k for k, v in counts.items() if v < 0)
            raise ValueError(f"count of chunk {bad!r} is negative ({counts[bad]})")
    else:
        raise TypeError(f"counts must be a Mapping or ChunkCounts, got {type(counts).__name__}")
    return _learn(keys, key_off, weights, vocab_size, substrate, min_frequency, special_tokens)


def train(texts, vocab_size, substrate="ube", min_frequency=0, special_tokens=(),
          pretokenizer="gpt2"):
    """Count the chunks of ``texts`` and learn merges: :func:`count_chunks` then
    :func:`train_from_counts`. Returns ``(vocab, merges)``."""
    substrate_code(substrate)  # fail on a bad substrate before counting a corpus
    _check_options(vocab_size, min_frequency, special_tokens)
    return train_from_counts(count_chunks(texts, pretokenizer=pretokenizer), vocab_size,
                             substrate, min_frequency, special_tokens)
