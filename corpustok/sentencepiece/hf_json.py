"""SentencePiece-style BPE from an HF ``tokenizer.json`` (Mistral v0.1, Llama 2's form (untested),
Gemma 1/2, Gemma 3), encoded exactly as HF ``tokenizers`` does
(``Tokenizer.from_file(f).encode(text, add_special_tokens=False).ids``), on the SentencePiece
BPE kernel (:mod:`corpustok.kernels.sentencepiece.bpe`, decision 0034).

What the file holds and how HF runs it, step by step:

1. Added tokens (all ``normalized: false``, no ``lstrip``/``rstrip``/``single_word``; special
   or not) are found in the raw text first, leftmost-longest (HF's added vocabulary; the
   Numba :func:`~corpustok.kernels.sentencepiece.added.cut_added` on their byte trie): a
   literal ``<s>`` or Gemma's ``\\n`` is its id. The text between them is a *segment*.
2. The normalizer runs on each non-empty segment alone: ``Prepend("▁")`` (Mistral, Llama 2)
   puts one U+2581 in front of each segment, ``Replace(" ", "▁")`` writes every space as
   U+2581 (the kernel's ``add_dummy_prefix`` and ``escape_whitespaces``, spaces never
   collapsed). Gemma's ``Split(" ")`` pre-tokenizer comes after the Replace and finds no
   space: it never splits.
3. The BPE model: one symbol per character (a character that is no token: its bytes as
   ``<0xXX>`` tokens, byte fallback), then the adjacent pair of the lowest *line* in the merges
   list merges first, the leftmost on ties. The kernel's pair table maps a pair to its line
   (``merge_value``: rank = line), so two pairs that make the same token keep their own
   ranks as in ``tokenizers`` (a ``.model`` ranks every split of a piece alike; Gemma's
   merges list orders 87 such pairs apart).

Decoding is the file's decoder: ``Replace("▁", " ")``, ``ByteFallback`` (a run of byte
tokens is its UTF-8 text, or one U+FFFD per byte when invalid), ``Fuse``, ``Strip`` (the
space ``Prepend`` put in front), after special added tokens are skipped (HF's default).

Shapes outside these are refused in one line each
(:func:`corpustok.formats.hf_spbpe.spbpe_problem`).
"""
import re
import threading

import numpy as np

from corpustok.arrow import freeze_arrays, read_only
from corpustok.formats.hf_spbpe import is_spbpe_doc, metaspace, prepends, spbpe_problem
from corpustok.kernels.bpe.cache import FAST_KEY, FAST_PER_SLOT
from corpustok.kernels.sentencepiece.bpe import (BYTE_FALLBACK, CUT_WORDS, DUMMY_PREFIX, ESCAPE,
                                                 ID_BITS, N_PIECES, SETTINGS, UNK, SpBpeModel,
                                                 fill_pairs)
from corpustok.sentencepiece.bpe import (CACHE_SLOTS, SentencePieceBpe, _grid,
                                         _user_trie, cut_table)
from corpustok.sentencepiece.hf_added import HfJsonTokenizer

__all__ = ["HfSentencePieceTokenizer"]


def _merge_pair(line):
    if isinstance(line, str):
        parts = line.split(" ")
        return tuple(parts) if len(parts) == 2 else None
    return tuple(line) if isinstance(line, list) and len(line) == 2 else None


def _merge_ids(merges, vocab):
    """``(left, right, made)`` int64 id arrays of the merges (``"a b"`` strings or ``[a, b]``
    lists), or None when one is not two tokens of ``vocab`` whose concatenation is one (then
    :func:`_check_merges` names it). Whole-list passes: Gemma 3's 514,906 merges one by one
    took 1.2 s of its load (2026-12-06)."""
    get = vocab.get
    try:
        pairs = [m.split(" ") if isinstance(m, str) else m for m in merges]
        n = len(pairs)
        left = np.fromiter((get(a, -1) for a, _ in pairs), np.int64, n)
        right = np.fromiter((get(b, -1) for _, b in pairs), np.int64, n)
        made = np.fromiter((get(a + b, -1) for a, b in pairs), np.int64, n)
    except (TypeError, ValueError):  # a merge of another shape, or parts that are not str
        return None
    if n and min(left.min(), right.min(), made.min()) < 0:
        return None
    return left, right, made


def _check_merges(path, merges, vocab):
    """Raise the ValueError naming the first merge that is not two tokens of ``vocab`` whose
    concatenation is one (the reference of :func:`_merge_ids`)."""
    for k, line in enumerate(merges):
        pair = _merge_pair(line)
        if pair is None or not all(isinstance(p, str) for p in pair) or pair[0] not in vocab \
                or pair[1] not in vocab or pair[0] + pair[1] not in vocab:
            raise ValueError(f"{path}: merge {k} ({line!r}) is not two tokens of the vocab "
                             "whose concatenation is one")
    raise AssertionError("merges that _merge_ids refused passed every check")


class _Tables:
    """The kernel tables of a tokenizer.json (see the module docstring)."""

    def __init__(self, path, doc):
        model = doc["model"]
        vocab = model["vocab"]
        if not isinstance(vocab, dict) or not vocab:
            raise ValueError(f"{path}: the BPE model has no vocab object")
        n = max(vocab.values()) + 1
        if n >= 1 << ID_BITS:
            raise ValueError(f"{path}: a vocabulary of {n} ids (the kernel packs {ID_BITS} "
                             f"bits of an id)")
        tokens = [None] * n
        for t, i in vocab.items():
            tokens[i] = t
        self.tokens = tokens
        unk_token = model.get("unk_token")
        if unk_token is not None and unk_token not in vocab:
            raise ValueError(f"{path}: the unk_token {unk_token!r} is not in the vocab")
        unk = vocab[unk_token] if unk_token is not None else 0
        # HF's byte fallback: a character that is no token becomes its bytes' tokens, or the
        # unknown token when one of them is missing: refused unless that cannot happen
        missing = [b for b in range(256) if f"<0x{b:02X}>" not in vocab]
        reachable = [b for b in missing if (b < 0x80 and chr(b) not in vocab) or
                     0x80 <= b <= 0xF4 and b not in (0xC0, 0xC1)]
        if reachable:
            raise ValueError(f"{path}: byte_fallback without the byte token <0x"
                             f"{reachable[0]:02X}> (a character would be unknown): not "
                             "supported")
        ids = _merge_ids(model["merges"], vocab)
        if ids is None:
            _check_merges(path, model["merges"], vocab)  # names the first bad merge
        left, right, made = ids
        merged = np.arange(len(made), dtype=np.int32)
        if len(merged) >= 1 << ID_BITS:
            raise ValueError(f"{path}: {len(merged)} merges (the kernel packs {ID_BITS} bits)")
        merge_value = np.arange(len(made), dtype=np.int64) << ID_BITS | made
        char_sym = np.full(0x110000, -1, np.int32)
        for t, i in vocab.items():
            if len(t) == 1:
                char_sym[ord(t)] = i
        slots = 16
        while slots < 2 * len(left):
            slots *= 2
        pairs = np.full(slots, -1, np.int64)
        fill_pairs(pairs, left.astype(np.int32), right.astype(np.int32), merged)
        # the grid's symbols after ASCII and U+2581: the tokens made by the first lines
        first = np.full(n, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(first, made, np.arange(len(made), dtype=np.int64))
        merge_ids = np.unique(made)
        grid_of, grid = _grid(vocab, first, merge_ids, left, right, merged, n)
        trie, user_first = _user_trie([])  # added tokens are cut out before the kernel
        settings = np.zeros(SETTINGS, np.int64)
        settings[UNK] = unk
        settings[BYTE_FALLBACK] = 1
        settings[DUMMY_PREFIX] = prepends(doc)
        settings[ESCAPE] = 1
        settings[CUT_WORDS] = 1  # where merges cannot join two characters (cut_table)
        settings[N_PIECES] = n
        self.kernel = freeze_arrays(SpBpeModel(
            char_sym=char_sym, pairs=pairs, merge_value=merge_value, grid_of=grid_of,
            grid=grid, out_id=np.arange(n, dtype=np.int32),
            sym_len=np.array([len(t.encode()) if t is not None else 0 for t in tokens],
                             np.int32),
            byte_ids=np.array([vocab.get(f"<0x{b:02X}>", unk) for b in range(256)], np.int32),
            user_trie=trie, user_first=user_first,
            cut=cut_table([tokens[i] for i in merge_ids.tolist()]), settings=settings))
        self.merge_ids = merge_ids


class _Kernel(SentencePieceBpe):
    """:class:`SentencePieceBpe`'s batch call on the tables of a tokenizer.json."""

    def __init__(self, tables):
        self.tables = tables.kernel
        self.kernel_normalizes = True
        self._vocab = self._model = None
        self._tokens, self._merge_ids = tables.tokens, tables.merge_ids
        self._seed = None
        self._local = threading.local()

    def seed(self):
        """The tokens merges make, of 2 to FAST_KEY bytes, as words (a pure memo, see
        :meth:`SentencePieceBpe.seed`), the first ids last."""
        if self._seed is None:
            words = [raw for raw in (self._tokens[i].encode() for i in self._merge_ids.tolist())
                     if 2 <= len(raw) <= FAST_KEY][:FAST_PER_SLOT * CACHE_SLOTS][::-1]
            offsets = np.zeros(len(words) + 1, np.int64)
            np.cumsum([len(w) for w in words], out=offsets[1:])
            self._seed = read_only(np.frombuffer(b"".join(words), np.uint8)), offsets
        return self._seed


class HfSentencePieceTokenizer(HfJsonTokenizer):
    """A SentencePiece-style BPE ``tokenizer.json`` (see the module docstring). Build it with
    :meth:`from_file` or ``corpustok.load(path)``. ``encode`` is HF's
    ``encode(text, add_special_tokens=False).ids``: added tokens written in the text (``<s>``,
    ``<start_of_turn>``, Gemma's ``\\n``) are their ids, as in ``tokenizers``."""

    def __init__(self, doc, source="a tokenizer.json"):
        problem = spbpe_problem(doc) if is_spbpe_doc(doc) else \
            "not a SentencePiece-style BPE tokenizer.json"
        if problem:
            raise ValueError(f"{source}: {problem}")
        tables = _Tables(source, doc)
        self._kernel = _Kernel(tables)
        self._read_added(doc, tables.tokens)
        dec = doc["decoder"]
        self._decoder = dec["decoders"] if dec.get("type") == "Sequence" else [dec]
        self._meta = metaspace(doc)  # (prepend scheme, split) of a Metaspace file, or None

    @property
    def unk_id(self):
        return int(self._kernel.tables.settings[UNK])

    def _encode_part(self, data, offsets, well_formed):
        """The kernel replaces invalid bytes itself (``well_formed`` is not needed)."""
        cuts, added, doc_first = self._segments(data, offsets)
        if self._meta is not None:
            data, cuts, added, doc_first = _metaspace_segments(data, cuts, added, doc_first,
                                                               *self._meta)
        return self._kernel.encode_segments(data, cuts, added, doc_first)

    def _decode(self, ids, skip_special_tokens):
        tokens = self._tokens_of(ids, skip_special_tokens)
        for step in self._decoder:
            tokens = _DECODE_STEPS[step["type"]](step, tokens)
        return "".join(tokens)

    def __repr__(self):
        return (f"HfSentencePieceTokenizer(vocab_size={self.vocab_size}, "
                f"prepend={bool(self._kernel.tables.settings[DUMMY_PREFIX])}, "
                f"added_tokens={len(self._added)})")


def _starts_space(data, at, end):
    """Per position ``at`` (< ``end``): the text there begins with ' ' or U+2581."""
    first = data[np.minimum(at, len(data) - 1)]
    meta = np.zeros(len(at), bool)
    three = at + 2 < end
    meta[three] = (data[at[three]] == 0xE2) & (data[at[three] + 1] == 0x96) & \
        (data[at[three] + 2] == 0x81)
    return (first == 0x20) | meta


def _metaspace_segments(data, cuts, added, doc_first, scheme, split):
    """HF's Metaspace pre-tokenizer on the text segments, as inputs of the kernel (which
    writes every space as U+2581 itself): a space byte put in front of each non-empty segment
    that does not begin with ' ' or U+2581 (``always``; ``first``: only a document's first
    segment, which begins at its offset 0; ``never``: none), and with ``split`` a cut before
    every ' ' and U+2581 inside a segment (HF encodes each piece alone). Returns the new
    ``(data, cuts, added, doc_first)``; the added tokens' segments are kept as they are."""
    lo, hi = int(cuts[0]), int(cuts[-1])
    data = np.asarray(data[lo:hi])
    cuts = np.asarray(cuts, np.int64) - lo
    starts, ends = cuts[:-1], cuts[1:]
    text = added < 0
    want = text & (ends > starts)
    if scheme == "first":
        first = np.zeros(len(added), bool)
        first[doc_first[:-1][doc_first[:-1] < doc_first[1:]]] = True
        want &= first
    elif scheme == "never":
        want[:] = False
    want[want] &= ~_starts_space(data, starts[want], ends[want])
    at = starts[want]
    if len(at):
        data = np.insert(data, at, np.uint8(0x20))
        cuts = cuts + np.searchsorted(at, cuts, side="left")
    if split:
        # every ' ' (0x20) or U+2581 lead inside a text segment begins a new piece
        seg = np.repeat(np.arange(len(added)), np.diff(cuts))
        is_space = data == 0x20
        is_meta = np.zeros(len(data), bool)
        is_meta[:-2] = (data[:-2] == 0xE2) & (data[1:-1] == 0x96) & (data[2:] == 0x81)
        inside = np.ones(len(data), bool)
        inside[cuts[:-1][cuts[:-1] < len(data)]] = False
        new = np.flatnonzero((is_space | is_meta) & inside & text[seg])
        if len(new):  # the pieces join the segments, in order of their starts
            starts = np.concatenate([cuts[:-1], new])
            order = np.argsort(starts, kind="stable")
            place = np.empty(len(order), np.int64)
            place[order] = np.arange(len(order))
            added = np.concatenate([added, np.full(len(new), -1, np.int32)])[order]
            doc_first = np.r_[place[doc_first[:-1]], len(order)]
            cuts = np.r_[starts[order], cuts[-1]]
    return read_only(np.ascontiguousarray(data)), read_only(cuts), added, doc_first


def _replace(step, tokens):
    old, new = step["pattern"]["String"], step["content"]
    return [t.replace(old, new) for t in tokens]


def _byte_fallback(step, tokens):
    """HF's ByteFallback: a run of ``<0xXX>`` tokens is its bytes' text, or one U+FFFD per
    byte when they are not valid UTF-8."""
    out, run = [], []

    def flush():
        if run:
            try:
                out.append(bytes(run).decode("utf-8"))
            except UnicodeDecodeError:
                out.extend("\ufffd" * len(run))
            run.clear()

    for t in tokens:
        if len(t) == 6 and t.startswith("<0x") and t.endswith(">") and \
                re.fullmatch("[0-9A-Fa-f]{2}", t[3:5]):
            run.append(int(t[3:5], 16))
            continue
        flush()
        out.append(t)
    flush()
    return out


def _fuse(step, tokens):
    return ["".join(tokens)]


def _strip(step, tokens):
    """HF's Strip: up to ``start`` leading and ``stop`` trailing ``content`` characters off
    each token."""
    c, start, stop = step["content"], step.get("start", 0), step.get("stop", 0)
    out = []
    for t in tokens:
        a = 0
        while a < min(start, len(t)) and t[a] == c:
            a += 1
        b = len(t)
        while len(t) - b < stop and b > a and t[b - 1] == c:
            b -= 1
        out.append(t[a:b])
    return out


_DECODE_STEPS = {"Replace": _replace, "ByteFallback": _byte_fallback, "Fuse": _fuse,
                 "Strip": _strip}
