"""BytePairTokenizer: byte-level BPE on the ``ube``, ``utf8`` or ``utf16`` substrate.

Text is split with the GPT-2 pre-tokenizer, each chunk becomes the substrate's base symbols
(:mod:`corpustok.substrate`) and the merges are applied by rank, exactly as HF's BPE model applies
them. Ids are whatever the vocabulary says; decoding is lossless for every valid text and
follows Python's ``errors="replace"`` for id sequences that do not form valid text.

The split follows the ``regex`` module's Unicode tables; HF (Oniguruma) and tiktoken (Rust
``regex``) ship older ones, so text in recently added scripts (e.g. Kirat Rai, Unicode 16) can
split, and then encode, differently from them. Everything else gives their ids exactly.
"""
import json
import os
from typing import NamedTuple, Optional

import numpy as np
import pyarrow as pa

from corpustok.tokenizer import FILE_FORMAT, WholeTextStream
from corpustok.arrow import (id_lists, is_well_formed, list_array, pool_array, read_only,
                             string_array, utf8_batch)
from corpustok.bpe.stream import BpeStreamDecoder, BpeStreamEncoder, NormalizingEncoder
from corpustok.bpe.caches import ChunkCaches
from corpustok.kernels.bpe.decode import expand_ids, stitch_text
from corpustok.kernels.bpe.encode import BpeModel, checked_room, encode_docs
from corpustok.kernels.bpe.merge import build_pair_table
from corpustok.kernels.bpe.premerge import premerge_table
from corpustok.kernels.substrate import decode_symbols
from corpustok.nfc import NfcStream, nfc_batch
from corpustok.pretokenize.patterns import resolve
from corpustok.pretokenize.specials import special_matcher
from corpustok.parallel import ThreadPools, check_threads
from corpustok.bpe.table_cache import merge_tables, rank_tables
from corpustok.bpe.tables import RankTables, build_rank_tables, merge_ids, whole_chunk_table
from corpustok.formats.hf import gpt2_files, hf_bpe_model
from corpustok.formats.json_file import from_json_file
from corpustok.formats.hf_export import hf_document
from corpustok.formats.tiktoken import rank_file_parts, read_tekken
from corpustok.vocab import VocabIds, check_dense_ids, is_id, short, string_list, vocab_ids
from corpustok.substrate import SYMBOL_STRINGS, alphabet, parse_symbols, substrate_code

__all__ = ["BytePairTokenizer"]

DEFAULT_CACHE_SIZE = 1 << 15  # general chunk-cache slots per thread (33 MB of cache in all)


class ParsedVocab(NamedTuple):
    """What a file's reader already knows when it builds a tokenizer: ``ids``, the vocab's
    ids as an int64 array (``vocab_ids(vocab)``); ``owned``: the vocab dict is the
    tokenizer's to keep (no copy); ``strings``: the merges may be HF ``"left right"``
    strings."""

    ids: Optional[np.ndarray] = None
    owned: bool = False
    strings: bool = False


class BytePairTokenizer:
    """Byte-level BPE tokenizer.

    ``vocab`` maps token strings (base-symbol strings, see :data:`corpustok.substrate.SYMBOL_STRINGS`,
    and the special tokens) to ids; ``merges`` lists ``(left, right)`` symbol-string pairs in
    rank order (HF's rule), or is None for tiktoken's rule: any adjacent pair whose
    concatenation is a token merges, lower ids first. ``special_tokens`` names the vocabulary
    entries that are literal text (decoded as themselves, matched in text only with
    ``recognize_special=True``). ``pretokenizer`` is a name of
    :data:`corpustok.pretokenize.patterns.PATTERNS` (or an alias) or a split pattern string;
    ``whole_chunks`` emits a chunk that is itself a token as that token (tiktoken; HF's
    ``ignore_merges``); ``normalize="NFC"`` normalizes text before splitting (Qwen).
    ``cache_size`` is the number of chunk-cache slots (a power of two) each thread keeps,
    1,056 bytes each (33 MB at the default).
    """

    def __init__(self, vocab, merges, substrate="ube", special_tokens=(),
                 cache_size=DEFAULT_CACHE_SIZE, *, pretokenizer="gpt2", whole_chunks=False,
                 normalize=None):
        self._setup(vocab, merges, substrate, special_tokens, cache_size,
                    pretokenizer=pretokenizer, whole_chunks=whole_chunks, normalize=normalize)

    def _setup(self, vocab, merges, substrate, special_tokens, cache_size, parsed=None, *,
               pretokenizer="gpt2", whole_chunks=False, normalize=None):
        # parsed: what a file's reader already knows of vocab and merges (ParsedVocab).
        ids, owned, strings = parsed or ParsedVocab()
        self._code = substrate_code(substrate)
        self._substrate = substrate
        self._split, self._python_split, self._pretokenizer = resolve(pretokenizer)
        if normalize not in (None, "NFC"):
            raise ValueError(f"normalize must be None or 'NFC', got {normalize!r}")
        self._normalize = normalize
        if not isinstance(vocab, dict):
            raise TypeError(f"vocab must be a dict of token string -> id, got "
                            f"{type(vocab).__name__}")
        ids = vocab_ids(vocab) if ids is None else ids
        if ids is None:  # the loop names the first bad entry
            for tok, i in vocab.items():
                if not isinstance(tok, str) or not is_id(i) or i < 0:
                    raise ValueError(f"vocab entry {tok!r}: {i!r}: expected a str token and "
                                     "a non-negative int id")
            check_dense_ids(vocab)
            ids = np.fromiter(vocab.values(), np.int64, len(vocab))
        else:
            check_dense_ids(vocab, ids=ids)
        if merges is not None and isinstance(merges, (str, bytes, dict)):
            raise TypeError(f"merges must be a list of (left, right) pairs, got "
                            f"{type(merges).__name__}")
        specials = string_list(special_tokens, "special_tokens")
        for s in specials:
            if s not in vocab:
                raise ValueError(f"special token {s!r} is not in the vocabulary; add it to "
                                 "vocab with its id")
        self._caches = ChunkCaches(cache_size)
        self._vocab = vocab if owned else dict(vocab)
        self._specials = specials
        self._exists = np.zeros(ids.max(initial=-1) + 1, bool)
        self._exists[ids] = True
        if np.count_nonzero(self._exists) < len(ids):
            first = {}
            for tok, i in vocab.items():
                if i in first:
                    raise ValueError(f"id {i} is used by both {first[i]!r} and {tok!r}")
                first[i] = tok
        self._decodable = VocabIds(self._exists)
        tokens = np.empty(len(self._exists), object)  # None at unused ids
        tokens[ids] = np.fromiter(vocab, object, len(vocab))
        self._id_to_tok = tokens.tolist()
        self._build_tables(specials, tokens)
        plain = self._exists & ~self._is_special
        self._whole_chunks = bool(whole_chunks)
        whole_plain = plain & self._whole_chunks
        # the tables: read from the memo on disk when kept there
        if merges is None:  # a rank file's
            self._pairs, self._pre, self._whole = rank_tables(
                self._tok_sym, self._tok_off, plain, whole_plain, self._sym_id,
                build_rank_tables)
            self._merges = None
        else:
            merges = merges if isinstance(merges, list) else list(merges)
            (self._pairs, self._pre, self._whole), self._merges = merge_tables(
                self._tok_sym, self._tok_off, plain, whole_plain, self._sym_id,
                merges, strings, lambda: self._merge_tables(merges, strings, whole_plain))
        self._pools = ThreadPools()

    # ---- construction ------------------------------------------------------------------------
    def _build_tables(self, specials, tokens):
        size = len(self._id_to_tok)
        sp_ids = sorted({self._vocab[s] for s in specials})
        self._is_special = np.zeros(size, bool)
        self._is_special[sp_ids] = True
        tokens[~self._exists | self._is_special] = ""  # the plain tokens' symbols, by id
        plain = tokens.tolist()
        try:
            self._tok_sym = parse_symbols("".join(plain), self._substrate)
        except ValueError:
            symbols = set(alphabet(self._substrate))
            i, tok = next((i, tok) for i, tok in enumerate(plain) if not symbols.issuperset(tok))
            bad = next(c for c in tok if c not in symbols)
            raise ValueError(f"vocab token {tok!r} (id {i}) holds {bad!r} (U+{ord(bad):04X}), "
                             f"which is no symbol of the {self._substrate!r} substrate; list "
                             "it in special_tokens if it is literal text") from None
        self._tok_off = np.zeros(size + 1, np.int64)
        np.cumsum(np.fromiter(map(len, plain), np.int64, size), out=self._tok_off[1:])
        sp_parts = [self._id_to_tok[i].encode("utf-8", "surrogatepass") for i in sp_ids]
        sp_lengths = np.zeros(size, np.int64)
        sp_lengths[sp_ids] = [len(b) for b in sp_parts]
        self._sp_text = np.frombuffer(b"".join(sp_parts), np.uint8)
        self._sp_off = np.zeros(size + 1, np.int64)
        np.cumsum(sp_lengths, out=self._sp_off[1:])
        self._sym_id = np.array([self._vocab.get(s, -1) for s in SYMBOL_STRINGS], np.int32)
        self._sp_match, self._sp_bytes, self._sp_regex = special_matcher(specials, self._vocab)

    def _merge_tables(self, merges, strings, whole_plain):
        """``(RankTables, merges as (left, right) ids)`` built from a merge list;
        ``whole_plain``: the tokens emitted whole."""
        pairs, merged, ids = self._build_merges(merges, strings)
        return RankTables(pairs, premerge_table(pairs),
                          whole_chunk_table(self._tok_sym, self._tok_off, whole_plain,
                                            self._sym_id, pairs, merged)), ids

    def _build_merges(self, merges, strings=False):
        # One Numba hash pass over all merges; anything unusual goes to the checking loop for
        # its message. Returns the pair table, the merged ids and the merges as (left, right)
        # ids: 8 bytes per merge.
        ids = merge_ids(merges, self._tok_sym, self._tok_off, self._exists & ~self._is_special,
                        self._substrate, strings)
        if ids is None:
            if strings:
                merges = [tuple(m.split(" ") if isinstance(m, str) else m) for m in merges]
            ids = self._check_merges(merges)
        return build_pair_table(*ids), ids[2], np.ascontiguousarray(ids[:2].T, np.int32)

    def _check_merges(self, merges):
        """The merges' ``(left, right, merged)`` ids (3 rows), or ValueError naming the first
        bad one."""
        specials = set(self._specials)
        ids = np.empty((3, len(merges)), np.int64)
        for k, pair in enumerate(merges):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2
                    and all(isinstance(p, str) for p in pair)):
                raise ValueError(f"merges[{k}] = {pair!r}: expected a pair of token strings")
            a, b = pair
            for part in (a, b, a + b):
                if part not in self._vocab or part in specials:
                    raise ValueError(f"merges[{k}] = ({a!r}, {b!r}): {part!r} is not a "
                                     "(non-special) vocabulary token; merges and vocab must "
                                     "come from the same training run")
            ids[:, k] = self._vocab[a], self._vocab[b], self._vocab[a + b]
        return ids

    def _cache(self):
        """This thread's chunk cache, seeded with the vocabulary (:mod:`corpustok.bpe.caches`)."""
        return self._caches.get(self._token_texts, lambda b: self._encode(b.data, b.offsets,
                                                                         False, True, True))

    def _token_texts(self):
        # int64 ids: decode()'s signature of the decode kernels (an int32 one compiled again)
        plain = np.flatnonzero(self._exists & ~self._is_special).astype(np.int64)
        text, offsets = self._decode_arrays(plain, np.arange(len(plain) + 1, dtype=np.int64))
        return text.tobytes(), offsets

    # ---- training and interchange -----------------------------------------------------------
    @classmethod
    def train(cls, texts, vocab_size, substrate="ube", min_frequency=0, special_tokens=(),
              pretokenizer="gpt2"):
        """Train on an iterable of ``str`` with HF ``BpeTrainer`` semantics (see
        :func:`corpustok.bpe_train.train`): specials first, then the substrate alphabet in
        code point order, then merges; ties go to the smallest ``(left_id, right_id)``.
        ``pretokenizer``: a name or pattern of :mod:`corpustok.pretokenize.patterns`."""
        from corpustok.bpe.train import train  # only when training: its kernels load on import

        vocab, merges = train(texts, vocab_size, substrate=substrate,
                              min_frequency=min_frequency, special_tokens=special_tokens,
                              pretokenizer=pretokenizer)
        return cls(vocab, merges, substrate=substrate, special_tokens=special_tokens,
                   pretokenizer=pretokenizer)

    def to_dict(self):
        """JSON-able form: ``{"format": "corpustok", "type": "bpe", ...}``."""
        t = self._id_to_tok
        d = {"format": FILE_FORMAT, "type": "bpe", "version": 1,
             "substrate": self._substrate, "pre_tokenizer": self._pretokenizer,
             "special_tokens": list(self._specials), "vocab": dict(self._vocab)}
        if self._merges is None:
            d["merges"] = None  # tiktoken's rule: the vocabulary's order ranks every pair
        else:
            d["merges"] = [[t[a], t[b]] for a, b in self._merges.tolist()]
        if self._whole_chunks:
            d["whole_chunks"] = True
        if self._normalize:
            d["normalize"] = self._normalize
        return d

    @classmethod
    def from_dict(cls, d):
        """Inverse of :meth:`to_dict`."""
        if not isinstance(d, dict) or d.get("format") != FILE_FORMAT or d.get("type") != "bpe":
            raise ValueError("not a corpustok BPE tokenizer: expected a dict with "
                             f"\"format\": \"{FILE_FORMAT}\" and \"type\": \"bpe\"")
        missing = [k for k in ("substrate", "vocab", "merges") if k not in d]
        if missing:
            raise ValueError(f"corpustok BPE tokenizer lacks the key(s) {missing}")
        for key, kind, what in (("vocab", dict, "an object of token -> id"),
                                ("merges", (list, type(None)),
                                 "a list of [left, right] pairs or null"),
                                ("special_tokens", list, "a list of token strings"),
                                ("substrate", str, "a substrate name"),
                                ("pre_tokenizer", (str, dict),
                                 "a pre-tokenizer name, pattern or HF pre_tokenizer object"),
                                ("whole_chunks", bool, "true or false"),
                                ("normalize", (str, type(None)), "\"NFC\" or null")):
            if key in d and not isinstance(d[key], kind):
                raise ValueError(f"\"{key}\" must be {what}, found {type(d[key]).__name__} "
                                 f"{short(d[key])}")
        try:
            return cls(d["vocab"], d["merges"], substrate=d["substrate"],
                       special_tokens=d.get("special_tokens", ()),
                       pretokenizer=d.get("pre_tokenizer", "gpt2"),
                       whole_chunks=d.get("whole_chunks", False),
                       normalize=d.get("normalize"))
        except TypeError as e:  # a file's bad value, not a caller's bad argument
            raise ValueError(str(e)) from None

    def to_hf(self):
        """The HF ``tokenizer.json`` document (a dict; ``json.dump`` it) giving the same ids in
        ``tokenizers``/``transformers``: ``utf8`` tokenizers only, since HF's ByteLevel maps
        UTF-8 bytes and has no form for the ``ube`` or ``utf16`` symbols (the ValueError says
        so). See :mod:`corpustok.formats.hf_export`."""
        return hf_document(self)

    def save(self, path):
        """Write :meth:`to_dict` as JSON; read it back with :func:`corpustok.load`."""
        with open(os.fspath(path), "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, ensure_ascii=False)

    @classmethod
    def from_tiktoken(cls, path, pretokenizer=None, special_tokens=None, normalize=None):
        """Load a tiktoken rank file (``cl100k_base.tiktoken``, Llama 3's ``tokenizer.model``,
        ``qwen.tiktoken``): utf8 substrate, tiktoken's merge rule, chunks that are tokens
        emitted whole. The rank files of :data:`corpustok.formats.tiktoken` are recognized by
        sha256 (split pattern, special tokens and their ids, NFC for Qwen); any argument given
        overrides that, and any other file needs ``pretokenizer`` (a name or a pattern).
        ``special_tokens`` maps token strings to ids."""

        path = os.fspath(path)
        vocab, special_tokens, pretokenizer, normalize = rank_file_parts(
            path, pretokenizer, special_tokens, normalize)
        try:
            return cls(vocab, None, substrate="utf8", special_tokens=list(special_tokens),
                       pretokenizer=pretokenizer, whole_chunks=True, normalize=normalize)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path}: {e}") from None

    @classmethod
    def _from_tekken_doc(cls, path, doc):
        """A Mistral Tekken file (parsed: ``doc``): tiktoken's rules on its ranks, ids offset by
        its special tokens, its own split pattern."""

        vocab, pattern, specials = read_tekken(path, doc)
        try:
            return cls(vocab, None, substrate="utf8", special_tokens=specials,
                       pretokenizer=pattern, whole_chunks=True)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path}: {e}") from None

    @classmethod
    def from_hf(cls, path, merges_txt=None):
        """Load an HF ``tokenizer.json`` with a ByteLevel BPE model, or (two arguments) a
        GPT-2 style ``vocab.json`` + ``merges.txt``. Both are the ``utf8`` substrate; vocab
        entries that are not byte-level symbol strings (``<|endoftext|>``) and HF added tokens
        become special tokens.

        Linear in the entries; time and memory per entry are measured by
        ``bench/bpe_load.py`` (docs/benchmarks.md)."""
        if merges_txt is not None:
            return cls._from_gpt2_files(os.fspath(path), os.fspath(merges_txt))
        return from_json_file(os.fspath(path), cls._from_hf_doc)

    @classmethod
    def _from_hf_doc(cls, path, doc):
        """:meth:`from_hf` of the parsed ``doc``, whose vocab dict becomes the tokenizer's."""
        vocab, ids, merges, specials, options = hf_bpe_model(path, doc)
        return cls._from_file(path, vocab, merges, specials, ids, **options)

    @classmethod
    def _from_gpt2_files(cls, vocab_json, merges_txt, pretokenizer="gpt2"):
        vocab, merges, specials = gpt2_files(vocab_json, merges_txt)
        return cls._from_file(f"{vocab_json} + {merges_txt}", vocab, merges, specials,
                              pretokenizer=pretokenizer)

    @classmethod
    def _from_file(cls, where, vocab, merges, specials, ids=None, **options):
        """A ``utf8`` tokenizer of what a file's reader parsed: ``vocab`` (the tokenizer's own
        dict from now on; ``ids`` its values as an array where known) and ``merges`` as
        ``"left right"`` strings; a TypeError or ValueError becomes a ValueError naming
        ``where``."""
        tok = cls.__new__(cls)
        try:
            tok._setup(vocab, merges, "utf8", specials, DEFAULT_CACHE_SIZE,
                       ParsedVocab(ids, owned=True, strings=True), **options)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{where}: {e}") from None
        return tok

    def __getstate__(self):
        return self.to_dict() | {"cache_size": self._caches.size}

    def __setstate__(self, d):
        d = dict(d)
        size = d.pop("cache_size", DEFAULT_CACHE_SIZE)
        other = type(self).from_dict(d)
        other._caches = ChunkCaches(size)
        self.__dict__.update(other.__dict__)

    # ---- vocabulary -------------------------------------------------------------------------
    @property
    def substrate(self):
        return self._substrate

    @property
    def vocab(self):
        """Token string -> id (a copy)."""
        return dict(self._vocab)

    @property
    def merges(self):
        """Merges in rank order as ``(left, right)`` symbol-string pairs (a copy); None under
        tiktoken's rule (every pair that makes a token, ranked by the token's id)."""
        t = self._id_to_tok
        return None if self._merges is None else [(t[a], t[b]) for a, b in self._merges.tolist()]

    @property
    def pretokenizer(self):
        """The pre-tokenizer: a name of :data:`corpustok.pretokenize.patterns.PATTERNS` or a pattern."""
        return self._pretokenizer

    @property
    def special_tokens(self):
        return list(self._specials)

    @property
    def vocab_size(self):
        """The largest id + 1 (tiktoken's ``n_vocab``): every id is below it. A vocabulary
        with unused ids (cl100k's specials start at 100,257 and end at 100,276) counts them."""
        return len(self._id_to_tok)

    def token_to_id(self, token):
        return self._vocab.get(token)

    def id_to_token(self, i):
        return self._id_to_tok[i] if 0 <= i < len(self._id_to_tok) else None

    # ---- encoding ---------------------------------------------------------------------------
    @property
    def _model(self):
        """The kernels' model tuple (:mod:`corpustok.kernels.bpe.encode`)."""
        return BpeModel(self._code, self._split, self._sym_id, self._pairs, self._whole,
                        self._pre)

    def _encode(self, data, offsets, recognize_special, final, well_formed):
        # One array signature for every caller (Arrow buffers are read-only, offsets of
        # streams are not): each extra signature costs seconds of compilation on a cold cache.
        data = read_only(data)
        offsets = np.array(offsets, np.int64)
        model = self._model
        # the ids' room from Arrow's pool where its size is known (checked text); else the
        # kernel sizes it after counting
        room = pool_array(checked_room(offsets[-1] - offsets[0], model.substrate)
                          if well_formed else 0)
        return encode_docs(data, offsets, model, self._cache(), self._sp_match,
                           bool(recognize_special) and len(self._specials) > 0, final,
                           bool(well_formed), room)

    def encode_arrays(self, batch, *, recognize_special=False, threads=1):
        """One kernel call over a :class:`corpustok.arrow.Utf8Batch` (one per thread with
        ``threads`` > 1, same ids): ``(ids int32, offsets int64 [n+1], replaced int64 [n])``,
        ``replaced`` counting U+FFFD substitutions."""
        check_threads(threads)
        if self._normalize:
            batch = nfc_batch(batch)
        python_split = self._python_split is not None
        if python_split:  # chunks in Python, then one kernel "doc" each
            chunks, starts, replaced = self._python_split.split_batch(
                batch, self._sp_regex if recognize_special else None)
        text = chunks if python_split else batch
        data, offsets = text.data, text.offsets

        def part(offs):
            ids, out, rep, _ = self._encode(data, offs, recognize_special, True,
                                            is_well_formed(text, offs))
            return ids, out, rep

        ids, out, rep = self._pools.run(part, offsets, threads)
        if python_split:
            out = out[starts]
        else:
            replaced = rep
        if batch.replaced is not None:
            replaced = replaced + batch.replaced
        return ids, out, replaced

    def encode_batch(self, texts, *, recognize_special=False, threads=1):
        """Ids of a batch (list of ``str``/None or an Arrow string/binary array) as a
        ``pyarrow.ListArray`` of int32; null texts give null lists. ``threads``: encode parts
        of the batch in that many threads (the kernels release the GIL; same ids)."""
        batch = utf8_batch(texts)
        ids, offsets, _ = self.encode_arrays(batch, recognize_special=recognize_special,
                                             threads=threads)
        return list_array(offsets, ids, batch.valid)

    def encode(self, text, *, recognize_special=False):
        """Ids of one text. Special tokens are plain text unless ``recognize_special``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        batch = utf8_batch([text])
        ids, _, _ = self.encode_arrays(batch, recognize_special=recognize_special)
        return ids.tolist()

    def stream(self, *, recognize_special=False):
        """Incremental encoder: ``feed(str) -> list[int]``, ``finish() -> list[int]``; the
        concatenated output equals :meth:`encode` of the concatenated text. Memory is bounded
        by the longest chunk, except with a pre-tokenizer that runs in Python (the whole
        text is held)."""
        if self._python_split is not None:  # encode() normalizes
            return WholeTextStream(self, recognize_special)
        inner = BpeStreamEncoder(self, recognize_special)
        return NormalizingEncoder(NfcStream(), inner) if self._normalize else inner

    # ---- decoding ---------------------------------------------------------------------------
    def _decode_arrays(self, ids, doc_off):
        self._decodable.check(ids)
        ids = read_only(ids)  # one signature for lists and Arrow arrays
        symbols, seg_off = expand_ids(ids, doc_off, self._tok_sym, self._tok_off,
                                      self._is_special)
        seg_text = np.empty(3 * len(symbols), np.uint8)
        seg_text_off = np.empty(len(seg_off), np.int64)
        replaced = np.empty(len(seg_off) - 1, np.int64)
        n = decode_symbols(symbols, seg_off, self._code, seg_text, seg_text_off, replaced)
        return stitch_text(ids, doc_off, self._is_special, self._sp_text, self._sp_off,
                           seg_text[:n], seg_text_off)

    def decode(self, ids):
        """Text of a sequence of ids (lossless for ids from :meth:`encode`; malformed byte
        sequences give U+FFFD as ``bytes.decode(errors="replace")``). Specials decode as
        their text."""
        ids = self._decodable.array(ids)
        text, _ = self._decode_arrays(ids, np.array([0, len(ids)], np.int64))
        return text.tobytes().decode("utf-8")

    def decode_batch(self, lists):
        """Texts of an Arrow list array of ids (or a list of id lists); null lists give None."""
        if not isinstance(lists, (pa.Array, pa.ChunkedArray)):
            lists = [None if x is None else self._decodable.array(x, f"lists[{j}]: ")
                     for j, x in enumerate(lists)]
        ids, offsets, valid = id_lists(lists)
        text, text_off = self._decode_arrays(ids, offsets)
        return string_array(text_off, text, valid).to_pylist()

    def decode_stream(self):
        """Incremental decoder: ``feed(ids) -> str``, ``finish() -> str``; constant work per
        token, and the concatenated output equals :meth:`decode` of all ids."""
        return BpeStreamDecoder(self)

    def __repr__(self):
        return (f"BytePairTokenizer(substrate={self._substrate!r}, vocab_size={self.vocab_size}, "
                f"merges={'by rank' if self._merges is None else len(self._merges)}, "
                f"pretokenizer={self._pretokenizer!r}, special_tokens={len(self._specials)})")
