"""HF ``tokenizer.json`` files with a ``Unigram`` model (T5's own, and what ``transformers``
writes for T5, mT5 and ALBERT-shaped models), encoded exactly as HF ``tokenizers`` does:
``Tokenizer.from_file(f).encode(text, add_special_tokens=False).ids`` (decision 0037).

The normalizer steps run are ``Precompiled``, ``Strip``, ``Replace``, and (the json
``transformers`` writes for ALBERT) ``NFKD``, ``StripAccents``, ``Lowercase`` over Unicode
tables read from ``tokenizers`` itself (decision 0039). A batch runs through four Numba
steps: invalid bytes become U+FFFD (one per byte, only when the batch may hold any), added
tokens are cut out of the raw text
(:func:`~corpustok.kernels.sentencepiece.added.cut_added`), the normalizer steps run on each
segment between them (:mod:`corpustok.kernels.sentencepiece.hf_normalize`), then the
Metaspace pre-tokenizer and the float64 Viterbi on each word
(:mod:`corpustok.kernels.sentencepiece.hf_unigram`). The readable reference of all of it is
:class:`corpustok.sentencepiece.hf_unigram_reference.Reference`.

What differs from ``sentencepiece`` on the same model, and why these files follow HF: decision
0037. Shapes outside what is run are refused in one line each
(:func:`corpustok.formats.hf_unigram.unigram_problem`).
"""
import base64
import threading
from importlib import resources

import numpy as np

from corpustok.arrow import freeze_arrays, pool_array, read_only
from corpustok.gather import gather_ranges
from corpustok.formats.hf_unigram import (SPACE_RUNS, hf_score, is_unigram_doc,
                                          normalizer_steps, pre_tokenizer, prepend_scheme,
                                          unigram_problem)
from corpustok.kernels.bpe.cache import chunk_cache
from corpustok.kernels.sentencepiece.hf_normalize import (LOWERCASE, NFKD, PRECOMPILED, REPLACE,
                                                          SPACE_RUNS as RUNS, STRIP,
                                                          STRIP_ACCENTS, HfNormState,
                                                          ascii_plain,
                                                          hf_normalize_batch,
                                                          hf_normalized_room)
from corpustok.kernels.sentencepiece.hf_unigram import (ALWAYS, BYTE_FALLBACK, FIRST, NEVER,
                                                        PREPEND, SETTINGS, SPLIT, UNK,
                                                        WHITESPACE_SPLIT, HfUnigramModel,
                                                        hf_unigram_batch,
                                                        hf_unigram_ids_room)
from corpustok.kernels.sentencepiece.normalize import NormalizerState
from corpustok.kernels.sentencepiece.trie import build, build_trie
from corpustok.sentencepiece.hf_added import HfJsonTokenizer, join_segments
from corpustok.sentencepiece.hf_unicode import hf_unicode_tables
from corpustok.sentencepiece.model_file import split_charsmap
from corpustok.sentencepiece.normalizer import normalize

__all__ = ["HfUnigramTokenizer"]

SPACE = "\u2581"
CACHE_SLOTS = 1 << 15  # general slots of a thread's word cache (33 MB, as SentencePieceBpe)
_PROPS = None
UNICODE_STEPS = {"NFKD": NFKD, "StripAccents": STRIP_ACCENTS, "Lowercase": LOWERCASE}


def grapheme_props():
    """uint8 [0x110000]: the grapheme-cluster properties (``tools/gen_grapheme_props.py``)."""
    global _PROPS
    if _PROPS is None:
        with resources.files("corpustok").joinpath("data/grapheme_props.npz").open("rb") as f:
            z = np.load(f)
            starts, values = z["starts"].astype(np.int64), z["values"]
        lengths = np.diff(np.r_[starts, 0x110000])
        _PROPS = read_only(np.repeat(values, lengths))
    return _PROPS


def _identity_state():
    """A normalizer that only replaces invalid bytes (one U+FFFD each) and counts them."""
    da, val = build_trie([])
    return freeze_arrays(NormalizerState(
        charsmap=np.zeros(1, np.uint32), strings=np.zeros(1, np.uint8), user_da=da,
        user_val=val, has_charsmap=np.int64(0), has_user=np.int64(0),
        dummy_prefix=np.int64(0), collapse=np.int64(0), escape=np.int64(0),
        ascii_plain=np.ones(128 * 129, np.uint8)))


def norm_state(steps, where):
    """The :class:`HfNormState` of the normalizer's steps."""
    kinds, args = [], []
    pattern, pattern_off, content, content_off = [], [0], [], [0]
    charsmap, strings = np.zeros(1, np.uint32), np.zeros(1, np.uint8)
    for step in steps:
        kind = step["type"]
        pat = con = b""
        a = (0, 0)
        if kind == "Precompiled":
            if len(kinds) and PRECOMPILED in kinds:
                raise ValueError(f"{where}: two Precompiled normalizers: not supported")
            kinds.append(PRECOMPILED)
            trie, blob = split_charsmap(base64.b64decode(step["precompiled_charsmap"]), where)
            charsmap = trie
            strings = np.frombuffer(blob + b"\x00", np.uint8).copy()
        elif kind == "Strip":
            kinds.append(STRIP)
            a = (int(bool(step.get("strip_left"))), int(bool(step.get("strip_right"))))
        elif kind in UNICODE_STEPS:
            kinds.append(UNICODE_STEPS[kind])
        elif "String" in step["pattern"]:
            kinds.append(REPLACE)
            pat, con = step["pattern"]["String"].encode(), step["content"].encode()
        else:
            assert step["pattern"].get("Regex") == SPACE_RUNS
            kinds.append(RUNS)
            con = step["content"].encode()
        args.append(a)
        pattern.append(pat)
        content.append(con)
        pattern_off.append(pattern_off[-1] + len(pat))
        content_off.append(content_off[-1] + len(con))
    return freeze_arrays(HfNormState(
        kinds=np.array(kinds, np.int64), args=np.array(args, np.int64).reshape(-1, 2),
        pattern=np.frombuffer(b"".join(pattern) + b"\x00", np.uint8).copy(),
        pattern_off=np.array(pattern_off, np.int64),
        content=np.frombuffer(b"".join(content) + b"\x00", np.uint8).copy(),
        content_off=np.array(content_off, np.int64),
        charsmap=np.ascontiguousarray(charsmap, np.uint32), strings=strings,
        ascii_plain=ascii_plain(np.ascontiguousarray(charsmap, np.uint32)),
        props=grapheme_props(), unicode=hf_unicode_tables()))


def unigram_model(doc):
    """``(HfUnigramModel, tokens)`` of a Unigram document."""
    model = doc["model"]
    tokens = [t for t, _ in model["vocab"]]
    scores = np.array([hf_score(s) for _, s in model["vocab"]], np.float64)
    index = {t: i for i, t in enumerate(tokens)}  # the last id of a string, as HF
    keys = [t.encode() for t in index]
    key_off = np.zeros(len(keys) + 1, np.int64)
    np.cumsum([len(k) for k in keys], out=key_off[1:])
    key_bytes = np.frombuffer(b"".join(keys), np.uint8).copy()
    da, node_id = build(key_bytes, key_off, np.array(list(index.values()), np.int64))
    settings = np.zeros(SETTINGS, np.int64)
    settings[UNK] = model["unk_id"]
    settings[BYTE_FALLBACK] = bool(model.get("byte_fallback"))
    whitespace_split, meta = pre_tokenizer(doc)
    settings[WHITESPACE_SPLIT] = whitespace_split
    settings[PREPEND] = {"never": NEVER, "always": ALWAYS, "first": FIRST}[prepend_scheme(meta)]
    settings[SPLIT] = bool(meta.get("split", True))
    byte_ids = np.array([index.get(f"<0x{b:02X}>", -1) for b in range(256)], np.int32)
    return freeze_arrays(HfUnigramModel(
        nodes=da, node_id=node_id, scores=scores, byte_ids=byte_ids, settings=settings,
        unk_score=np.array([scores.min() - 10.0], np.float64))), tokens


class HfUnigramTokenizer(HfJsonTokenizer):
    """A Unigram ``tokenizer.json`` (see the module docstring). Build it with
    :meth:`from_file` or ``corpustok.load(path)``. ``encode`` is HF's
    ``encode(text, add_special_tokens=False).ids``: added tokens written in the text (T5's
    ``</s>``, ``<extra_id_0>``) are their ids, as in ``tokenizers``."""

    def __init__(self, doc, source="a tokenizer.json"):
        problem = unigram_problem(doc) if is_unigram_doc(doc) else \
            "not a Unigram tokenizer.json"
        if problem:
            raise ValueError(f"{source}: {problem}")
        self._norm = norm_state(normalizer_steps(doc), source)
        self._has_norm = len(self._norm.kinds) > 0
        self._model, tokens = unigram_model(doc)
        self._local = threading.local()
        self._clean = _identity_state()
        self._read_added(doc, tokens)
        dec = doc.get("decoder")
        self._decode_prepend = None if dec is None else prepend_scheme(dec)

    @property
    def unk_id(self):
        return int(self._model.settings[UNK])

    def _cache(self):
        """This thread's word cache (the kernel's memo of a word's ids, kept across calls)."""
        cache = getattr(self._local, "cache", None)
        if cache is None:
            cache = self._local.cache = chunk_cache(CACHE_SLOTS)
        return cache

    def _encode_part(self, data, offsets, well_formed):
        offsets = read_only(np.ascontiguousarray(offsets, np.int64))
        if well_formed:
            replaced = np.zeros(len(offsets) - 1, np.int64)
        else:
            data, offsets, replaced = normalize(self._clean, data, offsets)
            data, offsets = read_only(data), read_only(offsets)
        cuts, added, doc_first = self._segments(data, offsets)
        text = added < 0
        starts, ends = cuts[:-1][text], cuts[1:][text]
        if text.all():  # no added token in the part: the segments are the cuts
            seg_data, seg_offsets = data, read_only(np.ascontiguousarray(cuts, np.int64))
        else:  # the text segments gathered into a batch of their own
            seg_data, seg_offsets = gather_ranges(data, starts, ends - starts, in_pool=True)
            seg_data, seg_offsets = read_only(seg_data), read_only(seg_offsets)
        at_start = np.zeros(len(added), np.uint8)  # a document's first segment
        at_start[doc_first[:-1]] = 1
        at_start = read_only(at_start[text])
        if self._has_norm:
            seg_data, seg_offsets = hf_normalize_batch(  # in Arrow's pool: decision 0046
                seg_data, seg_offsets, self._norm,
                pool_array(hf_normalized_room(seg_offsets), np.uint8))
            seg_data, seg_offsets = read_only(seg_data), read_only(seg_offsets)
        ids, id_off = hf_unigram_batch(seg_data, seg_offsets, at_start, self._model,
                                       self._cache(), pool_array(hf_unigram_ids_room(seg_offsets)))
        out, out_off = join_segments(ids, id_off, added, doc_first)
        return out, out_off, replaced

    def _decode(self, ids, skip_special_tokens):
        tokens = self._tokens_of(ids, skip_special_tokens)
        if self._decode_prepend is None:
            return " ".join(tokens)
        out = []
        for k, t in enumerate(tokens):
            if k == 0 and self._decode_prepend != "never":
                out.append(t.replace(SPACE, ""))
            else:
                out.append(t.replace(SPACE, " "))
        return "".join(out)

    def __repr__(self):
        return (f"HfUnigramTokenizer(vocab_size={self.vocab_size}, "
                f"normalizer_steps={len(self._norm.kinds)}, added_tokens={len(self._added)})")
