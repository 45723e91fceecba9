"""Token-budget report: what each language costs under each tokenizer, on an aligned corpus.

An aligned (parallel) corpus is a set of records ``{unit, lang, text}``: the same alignment unit
(a sentence, an article) in several languages. Definitions, per tokenizer ``T`` and language L
(English, ``eng``, is the default reference language ``ref``):

- ``units``: aligned units L has; ``text_bytes``: UTF-8 bytes of their texts; ``tokens``: sum
  of ``|T(text)|`` over them (no BOS/EOS), as the tokenizer emits them.
- unknown tokens: ``unk_tokens`` is the number of the tokenizer's unknown token (``[UNK]``)
  among ``tokens``, ``unk_rate = unk_tokens / tokens``; ``unk_bytes`` the UTF-8 bytes of the
  words those ``[UNK]`` replaced (the words of the tokenizer's own pre-tokenizer, in the raw
  text) and ``unk_byte_share = unk_bytes / text_bytes``, the share of L's text the tokenizer
  did not encode. Only WordPiece has an unknown token; byte-level BPE encodes every byte.
- ``charged_tokens = tokens - unk_tokens + unk_bytes``: each ``[UNK]`` is charged the bytes it
  covers, one token per byte; ``mean_tokens = charged_tokens / units``.
- token premium (Petrov et al. 2023, ratio of corpus totals, not a mean of per-unit ratios):
  ``premium(L) = sum_{u in S} charged(L, u) / sum_{u in S} charged(ref, u)`` where ``S`` is the
  set of units both L and ref have (``shared_units``); empty when ``S`` is empty. The premium of
  ``ref`` is 1 by definition.
- encoding floor: base symbols before any merge (``corpustok.substrate.symbols_batch`` on the
  tokenizer's substrate: per character 1/2/3/4 symbols for ``utf8``, 2/2/2/4 for ``utf16``,
  1/2/2/4 for ``ube``, by UTF-8 length); ``floor`` is its sum over the units of L and
  ``floor_premium`` the same ratio as the premium. A WordPiece tokenizer has no byte-level base
  alphabet (an unknown word becomes one ``[UNK]``), so its floor columns are left empty.
- Gini of the premiums ``x_1..x_n`` of one tokenizer (population form):
  ``G = sum_i sum_j |x_i - x_j| / (2 n^2 mean(x))``, 0 when all languages pay the same.
  ``ref`` is excluded by default (its premium is 1 by definition, which would pull every
  tokenizer towards the same point); ``include_ref=True`` counts it. Languages without a
  premium (no shared unit) are left out; ``n`` is reported as ``languages``.
- ``script``: the most frequent Unicode script of the language's letters, taken from the first
  word of their Unicode names (``LATIN``, ``CYRILLIC``, ``CJK``...); ``utf8_len``: the most
  frequent UTF-8 length of its letters (1-4), which decides the UBE floor.

Why ``[UNK]`` is charged its bytes, not counted as one token nor left out. A word the tokenizer
maps to ``[UNK]`` is not encoded: the model never sees it. Counting the ``[UNK]`` as one token
makes the languages a tokenizer cannot read look the cheapest (BERT's uncased vocabulary puts
Thai and Khmer at a premium of 0.3, "three times cheaper than English"). Leaving out the
languages whose UNK rate passes a threshold was the other option, and we rejected it: it drops
exactly the languages a tokenizer serves worst, so its Gini would be taken over fewer, easier
languages (a survivor bias that lowers it) and stop being comparable with another tokenizer's
over all of them; the threshold would be a free parameter; and the languages under it would
still be credited for their ``[UNK]``. Charging the bytes keeps every language in every
tokenizer's Gini (the same ``n``), has no free parameter, and prices an unencoded word at what
encoding it costs a tokenizer with a byte fallback (SentencePiece's ``byte_fallback`` emits one
token per UTF-8 byte of a piece outside its vocabulary; it is the ``utf8`` encoding floor
above): no text looks cheaper for having been dropped. The charge is an estimate of a cost the
tokenizer does not pay, so the report says where it dominates: a language whose
``unk_byte_share`` exceeds ``unk_flag`` (1% by default) is marked ``unk_flagged`` and named in
the notes, and the plots mark it.

Counting (:func:`count_units`) encodes the records in batches, one ``encode_arrays`` kernel call
per tokenizer and batch, and yields per ``(tokenizer, lang, unit)`` :class:`Counts`;
:func:`metrics` turns counts into the report. The bytes under ``[UNK]`` are found by splitting
only the texts that have an ``[UNK]`` into the words of HF's ``BertNormalizer`` +
``BertPreTokenizer`` (whitespace, punctuation and CJK characters, from the same committed
Unicode tables as the WordPiece kernel) and encoding those words in one more kernel call: a
word is unknown exactly when it encodes to the one ``[UNK]``. The Beam form
(``corpustok.pipeline.report.beam``) produces the same counts with a CombinePerKey and feeds
the same :func:`metrics`. Writing the report (tables, Markdown, plots) is
:mod:`corpustok.pipeline.report.output`.

``--train`` (:class:`Training`) never trains on the evaluated text unless told to: without
training files it holds out (:func:`holdout_units`: the aligned units are split by section, a
unit with the units nested in it, into two disjoint sets; the texts of one set, in every
language, train and the other set is evaluated); either way it reports how many evaluated lines
the training text holds verbatim, the check that the split is disjoint.
The UBE-vs-BBPE comparison (:class:`Pair`) is made only between a ``utf8`` and a ``ube`` BPE
tokenizer of one vocabulary size that the report trained on the same text, or that the user
paired by name.
"""
import functools
import hashlib
import io
import json
import os
import re
import unicodedata
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

import numpy as np

from corpustok.arrow import utf8_batch
from corpustok.pipeline import files
from corpustok.substrate import symbols_batch

__all__ = ["DEFAULT_REF", "UNK_FLAG", "HELDOUT", "Fields", "Counts", "LangRow", "SummaryRow",
           "Pair", "Training", "UnitSplit", "Report", "gini", "script_of", "read_records",
           "read_texts", "units_of", "unit_sections", "holdout_units", "keep_units",
           "unit_texts", "text_lines", "watch_training", "train_substrates", "make_pair",
           "count_units", "unk_counts", "metrics", "report"]

DEFAULT_REF = "eng"
BATCH_RECORDS = 4096  # records per kernel call
TRAINED = (("BBPE", "utf8"), ("BBPE16", "utf16"), ("UBE", "ube"))  # --train names
TRAINED_PAIR = ("BBPE", "UBE")  # the UBE-vs-BBPE comparison of a --train report
UNK_FLAG = 0.01  # unk_byte_share above which a language is flagged (its premium mostly charged)
HELDOUT = 0.5  # share of the aligned units evaluated when --train holds out
OVERLAP_MIN_CHARS = 20  # shorter lines ("Article 1") are not counted as overlap


@dataclass(frozen=True)
class Fields:
    """Names of the record fields holding the alignment unit, the language and the text."""

    unit: str = "id"
    lang: str = "lang"
    text: str = "text"


class Counts(NamedTuple):
    """What the records of one ``(tokenizer, lang, unit)`` add up to: ``tokens`` as emitted,
    ``floor`` base symbols, ``unk_tokens`` unknown tokens among ``tokens``, ``unk_bytes``
    UTF-8 bytes of the words they replaced, ``text_bytes`` UTF-8 bytes of the texts."""

    tokens: int
    floor: int
    unk_tokens: int = 0
    unk_bytes: int = 0
    text_bytes: int = 0

    @property
    def charged(self):
        """Tokens the premium counts: each unknown token replaced by the bytes it covers."""
        return self.tokens - self.unk_tokens + self.unk_bytes


@dataclass
class LangRow:
    tokenizer: str
    lang: str
    script: str
    utf8_len: int
    units: int
    shared_units: int
    text_bytes: int
    tokens: int  # as the tokenizer emits them
    unk_tokens: int
    unk_rate: float  # unk_tokens / tokens
    unk_bytes: int
    unk_byte_share: float  # unk_bytes / text_bytes
    charged_tokens: int  # tokens - unk_tokens + unk_bytes: what the premium counts
    mean_tokens: float  # charged_tokens / units
    premium: Optional[float]
    floor: Optional[int]
    floor_premium: Optional[float]
    unk_flagged: bool  # unk_byte_share > the report's unk_flag


@dataclass
class SummaryRow:
    tokenizer: str
    substrate: str
    vocab_size: int
    languages: int  # n of the Gini: languages with a premium (ref only with include_ref)
    gini: Optional[float]
    mean_premium: Optional[float]
    median_premium: Optional[float]
    max_premium: Optional[float]
    max_premium_lang: str
    ref_tokens: int  # charged tokens of the reference language
    floor_gini: Optional[float]
    includes_ref: bool
    unk_tokens: int  # over all languages
    unk_flagged: int  # languages with unk_byte_share > unk_flag (still in the Gini)


@dataclass(frozen=True)
class Pair:
    """The two tokenizers of the UBE-vs-BBPE comparison and why they may be compared:
    ``origin`` is ``"trained"`` (this report trained both on the same text at
    ``vocab_size``) or ``"user"`` (paired by name with ``--pair``: the report checked their
    substrates and sizes, not their training text)."""

    bbpe: str
    ube: str
    origin: str
    vocab_size: int

    def provenance(self):
        """One sentence saying what the two tokenizers share."""
        if self.origin == "trained":
            return (f"{self.ube} and {self.bbpe} were trained by this report on the same text "
                    f"(one chunk count) at {self.vocab_size} ids.")
        return (f"{self.ube} and {self.bbpe} were paired by the user (--pair); both have "
                f"{self.vocab_size} ids, the report cannot check that they were trained on the "
                "same text.")


@dataclass(frozen=True)
class UnitSplit:
    """Disjoint aligned units: ``train`` (their texts train) and ``evaluate`` (reported), and
    the sections they were split by (:func:`unit_sections`): ``train_sections``,
    ``eval_sections``."""

    train: tuple
    evaluate: tuple
    train_sections: tuple
    eval_sections: tuple


@dataclass
class Training:
    """Where ``--train``'s text came from. ``source``: ``"heldout"`` (the evaluation corpus,
    split by unit: ``split``) or ``"files"`` (``--train-text``). ``chars``: characters trained
    on. ``eval_lines``: distinct evaluated lines of at least ``OVERLAP_MIN_CHARS`` characters;
    ``overlap_lines``: how many of them the training text holds verbatim as a line."""

    source: str
    vocab_size: int
    files: tuple = ()
    split: Optional[UnitSplit] = None
    chars: int = 0
    eval_lines: int = 0
    overlap_lines: int = 0

    def describe(self):
        """Sentences saying what was trained on and how it relates to the evaluated text."""
        if self.source == "heldout":
            s = self.split
            out = [f"Training text: held out from the evaluation corpus, split by section (a "
                   f"unit with the units nested in it): the texts of {len(s.train_sections)} "
                   f"section(s) ({len(s.train)} units), all languages, trained "
                   f"({self.chars:,} characters); the other {len(s.eval_sections)} "
                   f"section(s) ({len(s.evaluate)} units) are evaluated: "
                   f"{', '.join(s.eval_sections)}."]
        else:
            out = [f"Training text: {', '.join(os.path.basename(f) for f in self.files)} "
                   f"({self.chars:,} characters), given with --train-text; every unit is "
                   "evaluated."]
        share = self.overlap_lines / self.eval_lines if self.eval_lines else 0.0
        out.append(f"Overlap: {self.overlap_lines} of {self.eval_lines} evaluated lines "
                   f"(of {OVERLAP_MIN_CHARS}+ characters) occur verbatim in the training text "
                   f"({share:.1%})" + (": the tokenizers saw that much of the evaluated "
                                      "text in training, which makes its premiums optimistic."
                                      if share > 0.01 else "."))
        return out


@dataclass
class Report:
    ref_lang: str
    include_ref: bool
    languages: list  # LangRow, by tokenizer then lang
    summary: list  # SummaryRow, one per tokenizer
    notes: list = field(default_factory=list)
    unk_flag: float = UNK_FLAG
    pair: Optional[Pair] = None  # the UBE-vs-BBPE comparison, when one is allowed
    training: Optional[Training] = None  # set by ``report --train``

    def rows(self, tokenizer):
        return [r for r in self.languages if r.tokenizer == tokenizer]


# ---- input ---------------------------------------------------------------------------------
@contextmanager
def _text_lines(path):
    """Lines of a (possibly compressed, possibly remote) text file, through the pipeline's
    one file layer."""
    with files.open_lines(path) as f:
        yield io.TextIOWrapper(f, encoding="utf-8")


def read_records(paths):
    """Records (dicts) of JSONL files (plain, ``.gz``, ``.xz`` or ``.zst``, local or remote);
    blank lines are skipped. A malformed line stops the report with its file and line
    (ValueError), where the tokenize job counts it as a reject: a report missing a line would
    misstate that language's figures without saying so."""
    for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        with _text_lines(os.fspath(path)) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{n}: not JSON ({e}); expected one JSON object "
                                     "per line") from None
                if not isinstance(rec, dict):
                    raise ValueError(f"{path}:{n}: expected a JSON object, got "
                                     f"{type(rec).__name__}")
                yield rec


def read_texts(paths, max_bytes=None, piece_bytes=1 << 20):
    """Training texts of plain-text files (plain, ``.gz``, ``.xz``, ``.zst``) in pieces of
    about ``piece_bytes`` cut after a newline, up to ``max_bytes`` characters in all (None:
    everything). Cutting at line ends only changes a chunk count where whitespace runs span
    the cut."""
    total = 0
    for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        with _text_lines(os.fspath(path)) as f:
            buf, size = [], 0
            for line in f:
                if max_bytes is not None and total + size + len(line) > max_bytes:
                    if buf:
                        yield "".join(buf)
                    return
                buf.append(line)
                size += len(line)
                if size >= piece_bytes:
                    yield "".join(buf)
                    total += size
                    buf, size = [], 0
            if buf:
                yield "".join(buf)
                total += size


# ---- holding out and training --------------------------------------------------------------
def _unit(rec, flds):
    """The alignment unit of a record as :func:`batch_counts` keys it (None without one)."""
    unit = rec.get(flds.unit) if isinstance(rec, dict) else None
    return None if unit is None else str(unit)


def units_of(records, flds=Fields()):
    """The set of alignment units of ``records``."""
    return {u for u in (_unit(rec, flds) for rec in records) if u is not None}


SECTION_SEPARATORS = ":/."  # udhr:art14:p1 is nested in udhr:art14


def unit_sections(units):
    """``{unit: section}``: the section of a unit is the shortest unit of ``units`` that it
    extends after a separator (``udhr:art14:p1`` and ``udhr:art14:title`` are in
    ``udhr:art14``, whose text holds theirs), the unit itself when there is none. Splitting by
    section keeps a text and its parts on one side."""
    units = set(units)
    out = {}
    for u in units:
        out[u] = next((u[:i] for i, ch in enumerate(u)
                       if ch in SECTION_SEPARATORS and u[:i] in units), u)
    return out


def holdout_units(units, eval_fraction=HELDOUT):
    """Split ``units`` into a :class:`UnitSplit` of two disjoint, non-empty sets, by section
    (:func:`unit_sections`): the sections are ordered by the SHA-256 of their name (fixed,
    independent of the data's order and of the languages), the units of the first
    ``round(n * eval_fraction)`` are evaluated and those of the rest train."""
    if not 0 < eval_fraction < 1:
        raise ValueError(f"--heldout must be between 0 and 1 (exclusive), got {eval_fraction}")
    section = unit_sections(units)
    sections = sorted(set(section.values()))
    if len(sections) < 2:
        raise ValueError(f"holding out needs at least 2 aligned sections (units not nested in "
                         f"one another), the corpus has {len(sections)}; give --train-text "
                         "FILE")
    order = sorted(sections, key=lambda u: (hashlib.sha256(u.encode("utf-8")).hexdigest(), u))
    k = min(len(sections) - 1, max(1, round(len(sections) * eval_fraction)))
    held = set(order[:k])
    return UnitSplit(train=tuple(sorted(u for u, s in section.items() if s not in held)),
                     evaluate=tuple(sorted(u for u, s in section.items() if s in held)),
                     train_sections=tuple(sorted(order[k:])), eval_sections=tuple(sorted(held)))


def keep_units(records, flds, units):
    """The records of ``units`` (all records when ``units`` is None). A record without a unit
    is kept, for the counting to name it."""
    if units is None:
        yield from records
        return
    units = frozenset(units)
    for rec in records:
        u = _unit(rec, flds)
        if u is None or u in units:
            yield rec


def unit_texts(records, flds, units, max_chars=None):
    """The texts of the records of ``units`` (training text of a hold-out), up to
    ``max_chars`` characters in all (whole texts only)."""
    total = 0
    for rec in keep_units(records, flds, units):
        text = rec.get(flds.text)
        if not isinstance(text, str) or _unit(rec, flds) is None:
            continue
        if max_chars is not None and total + len(text) > max_chars:
            return
        total += len(text)
        yield text


def text_lines(texts, min_chars=OVERLAP_MIN_CHARS):
    """The distinct stripped lines of ``texts`` with at least ``min_chars`` characters."""
    return {s for t in texts for s in (line.strip() for line in t.split("\n"))
            if len(s) >= min_chars}


def watch_training(texts, lines, training):
    """Pass ``texts`` through, adding their characters to ``training.chars`` and the number
    of ``lines`` (evaluated lines) they hold verbatim as a line to
    ``training.overlap_lines``."""
    found = set()
    training.eval_lines = len(lines)
    for text in texts:
        training.chars += len(text)
        for line in text.split("\n"):
            s = line.strip()
            if len(s) >= OVERLAP_MIN_CHARS and s in lines:
                found.add(s)
        training.overlap_lines = len(found)
        yield text


def train_substrates(texts, vocab_size, substrates=TRAINED):
    """``{name: BytePairTokenizer}`` trained at the same ``vocab_size`` on the same texts for
    each ``(name, substrate)``: the chunks are counted once and every substrate learns from
    those counts (as the paper compares BBPE, BBPE16 and UBE)."""
    # here: not for the CLI's --help, which imports this module
    from corpustok.bpe.tokenizer import BytePairTokenizer
    from corpustok.bpe.train import count_chunks, train_from_counts
    counts = count_chunks(texts)
    out = {}
    for name, substrate in substrates:
        vocab, merges = train_from_counts(counts, vocab_size, substrate=substrate)
        out[name] = BytePairTokenizer(vocab, merges, substrate=substrate)
    return out


def make_pair(info, bbpe, ube, origin="user"):
    """The :class:`Pair` ``bbpe`` (a ``utf8`` BPE) vs ``ube`` (a ``ube`` BPE) of ``info``
    (:func:`tokenizer_info`); ValueError unless both exist with those substrates and one
    vocabulary size (a comparison across sizes measures the size, not the substrate)."""
    what = f"--pair {bbpe},{ube}" if origin == "user" else f"{ube} vs {bbpe}"
    for name, want in ((bbpe, "utf8"), (ube, "ube")):
        if name not in info:
            raise ValueError(f"{what}: no tokenizer named {name!r} (tokenizers: "
                             f"{', '.join(info)})")
        if info[name][0] != want:
            raise ValueError(f"{what}: {name!r} has substrate "
                             f"{info[name][0] or 'none (WordPiece)'}, expected {want}: the "
                             "comparison pairs a utf8 BPE (first) with a ube BPE (second)")
    if info[bbpe][1] != info[ube][1]:
        raise ValueError(f"{what}: vocabulary sizes differ ({info[bbpe][1]} vs "
                         f"{info[ube][1]}); UBE is compared only with a BBPE of the same size "
                         "trained on the same text")
    return Pair(bbpe, ube, origin, int(info[bbpe][1]))


# ---- counting ------------------------------------------------------------------------------
def _substrate(tok):
    return getattr(tok, "substrate", None)


def _columns(records, flds, start):
    units, langs, texts = [], [], []
    for k, rec in enumerate(records):
        try:
            unit, lang, text = rec[flds.unit], rec[flds.lang], rec[flds.text]
        except (KeyError, TypeError):
            keys = sorted(rec) if isinstance(rec, dict) else type(rec).__name__
            raise ValueError(f"record {start + k} lacks a field of {flds} (it has {keys}); "
                             "set the field names (--unit-field, --lang-field, "
                             "--text-field)") from None
        if not isinstance(text, str):
            raise TypeError(f"record {start + k}: field {flds.text!r} is "
                            f"{type(text).__name__}, expected str")
        if unit is None or lang is None:
            name = flds.unit if unit is None else flds.lang
            raise ValueError(f"record {start + k}: field {name!r} is null; every record needs "
                             "an alignment unit and a language")
        units.append(str(unit))
        langs.append(str(lang))
        texts.append(text)
    return units, langs, texts


def _mask(ranges):
    """Bool mask over all code points of ``[k, 2]`` half-open ranges."""
    mask = np.zeros(0x110000, bool)
    for a, b in ranges:
        mask[a:b] = True
    return mask


def _char_class(mask):
    """A regex character class body (``\\Uxxxxxxxx-\\Uxxxxxxxx`` ranges) of a code point mask."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return "".join(f"\\U{a:08x}-\\U{b - 1:08x}" for a, b in zip(edges[::2], edges[1::2]))


class _Words(NamedTuple):
    """A tokenizer's word split (``pattern``) and the runs of characters its normalizer
    removes at a word's edges (``edges``), which are no part of the word."""

    pattern: re.Pattern
    edges: re.Pattern


@functools.lru_cache(maxsize=None)
def _words(clean_text, handle_chinese_chars):
    """The words of HF's ``BertNormalizer`` + ``BertPreTokenizer`` over the raw text, from the
    tables the WordPiece kernel uses: whitespace separates, punctuation and (with
    ``handle_chinese_chars``) CJK ideographs are words of their own, and the characters
    ``clean_text`` removes (controls, format characters such as U+200B) neither separate nor
    stand alone: inside a word they vanish, at its edges they are stripped."""
    from corpustok.wordpiece.tokenizer import TABLES  # here: not for the CLI's --help
    with np.load(TABLES) as z:
        sep = _mask(z["pretok_ws"])
        alone = _mask(z["pretok_punct"])
        removed = np.zeros_like(sep)
        if clean_text:
            sep |= _mask(z["spaces"])
            removed = _mask(z["removed"])
            sep &= ~removed
            alone &= ~removed
        if handle_chinese_chars:
            alone |= _mask(z["chinese"])
    alone &= ~sep
    a, s, r = _char_class(alone), _char_class(sep), _char_class(removed)
    return _Words(re.compile(f"[{a}]|[^{s}{a}]+"),
                  re.compile(f"^[{r}]+|[{r}]+$" if r else "(?!)"))


def _unk_id(tok):
    """The id of ``tok``'s unknown token, or None (byte-level tokenizers have none)."""
    from corpustok.wordpiece.tokenizer import WordPiece  # here: not for the CLI's --help
    return tok.token_to_id(tok.unk_token) if isinstance(tok, WordPiece) else None


def unk_counts(tok, texts, ids, offsets):
    """``(unk_tokens, unk_bytes)``, int64 arrays over ``texts``: the unknown tokens among each
    text's ids (``ids``/``offsets`` of ``tok.encode_arrays``) and the UTF-8 bytes of the words
    they replaced. Only texts with an unknown token are split into words (see
    :func:`_words`); their words are encoded in one kernel call, and a word is unknown
    when it encodes to exactly the unknown token (WordPiece maps an unknown word to one)."""
    n = len(texts)
    unk = _unk_id(tok)
    unk_bytes = np.zeros(n, np.int64)
    if unk is None:
        return np.zeros(n, np.int64), unk_bytes
    hits = np.concatenate([[0], np.cumsum(ids == unk)])
    unk_tokens = hits[offsets[1:]] - hits[offsets[:-1]]
    todo = np.flatnonzero(unk_tokens)
    if len(todo):
        split = _words(tok.options["clean_text"], tok.options["handle_chinese_chars"])
        words, owner = [], []
        for k in todo:
            found = split.pattern.findall(texts[k])
            words += found
            owner += [k] * len(found)
        wids, woffsets, _ = tok.encode_arrays(utf8_batch(words))
        first = np.append(wids, -1)[woffsets[:-1]]  # -1 for a word that encodes to nothing
        unknown = (np.diff(woffsets) == 1) & (first == unk)
        size = np.array([len(split.edges.sub("", w).encode("utf-8", "surrogatepass"))
                         for w in words], np.int64)
        np.add.at(unk_bytes, np.asarray(owner, np.int64)[unknown], size[unknown])
    return unk_tokens, unk_bytes


def batch_counts(tokenizers, records, flds=Fields(), start=0):
    """``[((name, lang, unit), Counts)]`` for one batch of records: one ``encode_arrays`` call
    per tokenizer (two for a tokenizer that emits unknown tokens in the batch, see
    :func:`unk_counts`) and one ``symbols_batch`` call per substrate (floor 0 for tokenizers
    without a substrate). ``start`` numbers the records in errors."""
    units, langs, texts = _columns(records, flds, start)
    batch = utf8_batch(texts)
    text_bytes = np.diff(batch.offsets).tolist()
    floors = {}
    out = []
    for name, tok in tokenizers.items():
        ids, offsets, _ = tok.encode_arrays(batch)
        tokens = np.diff(offsets).tolist()
        unk_tokens, unk_bytes = (a.tolist() for a in unk_counts(tok, texts, ids, offsets))
        sub = _substrate(tok)
        if sub is None:
            floor = [0] * len(texts)
        else:
            if sub not in floors:
                floors[sub] = np.diff(symbols_batch(texts, sub).offsets.to_numpy()).tolist()
            floor = floors[sub]
        out.extend(((name, lang, unit), Counts(*c))
                   for lang, unit, *c in zip(langs, units, tokens, floor, unk_tokens,
                                             unk_bytes, text_bytes))
    return out


def add_counts(a, b):
    """Element-wise sum of two :class:`Counts` (the CombinePerKey of the Beam form)."""
    return Counts(*(x + y for x, y in zip(a, b)))


def lang_chars(records, flds=Fields(), start=0):
    """``[(lang, Counter of characters)]`` of one batch of records: what the script of each
    language is read from. Records are checked as :func:`batch_counts` checks them."""
    _, langs, texts = _columns(records, flds, start)
    chars = defaultdict(Counter)
    for lang, text in zip(langs, texts):
        chars[lang].update(text)
    return list(chars.items())


def count_units(tokenizers, records, flds=Fields(), batch_size=BATCH_RECORDS):
    """``(counts, chars)``: ``counts[(name, lang, unit)]`` the :class:`Counts` summed over the
    records of that key, ``chars[lang]`` a Counter of the characters of its texts."""
    counts, chars = {}, defaultdict(Counter)
    pending = []
    seen = 0

    def flush():
        for key, value in batch_counts(tokenizers, pending, flds, seen - len(pending)):
            counts[key] = add_counts(counts[key], value) if key in counts else value
        for lang, c in lang_chars(pending, flds, seen - len(pending)):
            chars[lang].update(c)
        pending.clear()

    for rec in records:
        pending.append(rec)
        seen += 1
        if len(pending) >= batch_size:
            flush()
    if pending:
        flush()
    return counts, dict(chars)


# ---- metrics -------------------------------------------------------------------------------
def gini(values):
    """Population Gini ``sum_i sum_j |x_i - x_j| / (2 n^2 mean)`` in O(n log n) through the
    sorted form ``2 sum_i i x_(i) / (n sum x) - (n + 1) / n`` (i = 1..n, ascending). None for
    no values; 0 when the sum is 0."""
    x = np.sort(np.asarray(list(values), dtype=np.float64))
    n = len(x)
    if n == 0:
        return None
    total = x.sum()
    if total == 0:
        return 0.0
    return float(2.0 * np.dot(np.arange(1, n + 1), x) / (n * total) - (n + 1) / n)


_NOT_SCRIPTS = {"MODIFIER", "COMBINING"}


def script_of(chars):
    """``(script, utf8_len)`` of a Counter of characters: the most frequent first word of the
    Unicode names of its letters (title case, e.g. ``Latin``, ``Cjk``, ``Hangul``) and the most
    frequent UTF-8 length of those letters; ``("Unknown", 0)`` without letters."""
    votes, lengths = Counter(), Counter()
    for ch, n in chars.items():
        if not unicodedata.category(ch).startswith("L"):
            continue
        word = unicodedata.name(ch, "").split(" ", 1)[0]
        if not word or word in _NOT_SCRIPTS:
            continue
        votes[word] += n
        lengths[len(ch.encode("utf-8"))] += n
    if not votes:
        return "Unknown", 0
    script = max(votes.items(), key=lambda kv: (kv[1], kv[0]))[0]
    width = max(lengths.items(), key=lambda kv: (kv[1], -kv[0]))[0]
    return script.title(), width


def _ratio(num, den):
    return num / den if den else None


def _lang_row(name, lang, units, ref, script, has_floor, unk_flag):
    """The :class:`LangRow` of ``units`` ``{unit: Counts}`` against the reference's ``ref``."""
    shared = units.keys() & ref.keys()
    total = Counts(*map(sum, zip(*units.values())))
    premium = _ratio(sum(units[u].charged for u in shared), sum(ref[u].charged for u in shared))
    floor = floor_premium = None
    if has_floor:
        floor = total.floor
        floor_premium = _ratio(sum(units[u].floor for u in shared),
                               sum(ref[u].floor for u in shared))
    share = total.unk_bytes / total.text_bytes if total.text_bytes else 0.0
    return LangRow(
        tokenizer=name, lang=lang, script=script[0], utf8_len=script[1], units=len(units),
        shared_units=len(shared), text_bytes=total.text_bytes, tokens=total.tokens,
        unk_tokens=total.unk_tokens,
        unk_rate=total.unk_tokens / total.tokens if total.tokens else 0.0,
        unk_bytes=total.unk_bytes, unk_byte_share=share, charged_tokens=total.charged,
        mean_tokens=total.charged / len(units), premium=premium, floor=floor,
        floor_premium=floor_premium, unk_flagged=share > unk_flag)


def _unk_note(name, rows, unk_flag):
    """The note on a tokenizer's unknown tokens, or None when it emitted none."""
    hit = [r for r in rows if r.unk_tokens]
    if not hit:
        return None
    flagged = sorted((r for r in hit if r.unk_flagged), key=lambda r: (-r.unk_byte_share, r.lang))
    names = ", ".join(f"{r.lang} {r.unk_byte_share:.0%}" for r in flagged[:12])
    return (f"{name}: [UNK] in {len(hit)} language(s), {sum(r.unk_tokens for r in hit)} in "
            "all; each is charged the UTF-8 bytes of the word it replaced (one token per "
            f"byte) in the premium. {len(flagged)} language(s) have more than {unk_flag:.0%} "
            "of their bytes under [UNK] (unk_flagged: premium mostly charged, not measured)"
            + (f": {names}{', ...' if len(flagged) > 12 else ''}" if flagged else ""))


def metrics(counts, chars, info, ref_lang=DEFAULT_REF, include_ref=False, unk_flag=UNK_FLAG):
    """The :class:`Report` of ``counts`` (:class:`Counts` from :func:`count_units` or the Beam
    form).

    ``info``: ``{name: (substrate or None, vocab_size)}`` in report order. ``chars``:
    ``{lang: Counter}`` for the script columns. ``unk_flag``: the ``unk_byte_share`` above
    which a language is flagged.
    """
    per = defaultdict(dict)  # (name, lang) -> {unit: Counts}
    for (name, lang, unit), value in counts.items():
        per[name, lang][unit] = Counts(*value)
    scripts = {lang: script_of(c) for lang, c in chars.items()}
    langs = sorted({lang for _, lang in per})
    notes = []
    if ref_lang not in langs:
        raise ValueError(f"reference language {ref_lang!r} is not in the corpus (languages: "
                         f"{', '.join(langs[:10])}{'...' if len(langs) > 10 else ''}); set "
                         "--ref-lang")
    rows, summary = [], []
    for name, (substrate, vocab_size) in info.items():
        ref = per.get((name, ref_lang), {})
        has_floor = substrate is not None
        name_rows = [_lang_row(name, lang, per[name, lang], ref,
                               scripts.get(lang, ("Unknown", 0)), has_floor, unk_flag)
                     for lang in langs if (name, lang) in per]
        rows.extend(name_rows)
        counted = [r for r in name_rows if r.premium is not None
                   and (include_ref or r.lang != ref_lang)]
        missing = sum(1 for r in name_rows if r.premium is None)
        if missing:
            notes.append(f"{name}: {missing} language(s) share no unit with {ref_lang!r} and "
                         "have no premium")
        unk_note = _unk_note(name, name_rows, unk_flag)
        if unk_note:
            notes.append(unk_note)
        prem = [r.premium for r in counted]
        top = max(counted, key=lambda r: r.premium, default=None)
        fl = [r.floor_premium for r in counted if r.floor_premium is not None]
        summary.append(SummaryRow(
            tokenizer=name, substrate=substrate or "", vocab_size=vocab_size,
            languages=len(prem), gini=gini(prem),
            mean_premium=float(np.mean(prem)) if prem else None,
            median_premium=float(np.median(prem)) if prem else None,
            max_premium=top.premium if top else None, max_premium_lang=top.lang if top else "",
            ref_tokens=sum(v.charged for v in ref.values()),
            floor_gini=gini(fl) if has_floor and fl else None, includes_ref=include_ref,
            unk_tokens=sum(r.unk_tokens for r in name_rows),
            unk_flagged=sum(1 for r in name_rows if r.unk_flagged)))
    return Report(ref_lang, include_ref, rows, summary, notes, unk_flag)


def tokenizer_info(tokenizers):
    """``{name: (substrate or None, vocab_size)}`` for :func:`metrics`."""
    return {name: (_substrate(tok), int(tok.vocab_size)) for name, tok in tokenizers.items()}


def report(tokenizers, records, *, ref_lang=DEFAULT_REF, include_ref=False, flds=Fields(),
           batch_size=BATCH_RECORDS, units=None, unk_flag=UNK_FLAG):
    """In-process report: ``tokenizers`` ``{name: tokenizer}``, ``records`` an iterable of
    dicts with the :class:`Fields`; ``units``: evaluate only these aligned units (None: all).
    Returns a :class:`Report`."""
    if not tokenizers:
        raise ValueError("no tokenizer given")
    counts, chars = count_units(tokenizers, keep_units(records, flds, units), flds, batch_size)
    if not counts:
        raise ValueError("no records")
    return metrics(counts, chars, tokenizer_info(tokenizers), ref_lang, include_ref, unk_flag)
