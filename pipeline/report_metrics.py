"""Token-budget report: what each language costs under each tokenizer, on an aligned corpus.

An aligned (parallel) corpus is a set of records ``{unit, lang, text}``: the same alignment unit
(a sentence, an article) in several languages. Definitions, per tokenizer ``T`` and language L
(English, ``eng``, is the default reference language ``ref``):

- ``units``: aligned units L has; ``tokens``: sum of ``|T(text)|`` over them (no BOS/EOS);
  ``mean_tokens = tokens / units``.
- token premium (Petrov et al. 2023, ratio of corpus totals, not a mean of per-unit ratios):
  ``premium(L) = sum_{u in S} tokens(L, u) / sum_{u in S} tokens(ref, u)`` where ``S`` is the
  set of units both L and ref have (``shared_units``); empty when ``S`` is empty. The premium of
  ``ref`` is 1 by definition.
- encoding floor: base symbols before any merge (``corpustok.ube.symbols_batch`` on the
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

Counting (:func:`count_units`) encodes the records in batches, one ``encode_arrays`` kernel call
per tokenizer and batch, and yields per ``(tokenizer, lang, unit)`` counts; :func:`metrics`
turns counts into the report. The Beam form (``corpustok.pipeline.report``) produces the same
counts with a CombinePerKey and feeds the same :func:`metrics`. Writing the report (tables,
Markdown, plots) is :mod:`corpustok.pipeline.report_output`.
"""
import io
import json
import os
import unicodedata
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from corpustok._arrow import utf8_batch
from corpustok.pipeline import files
from corpustok.ube import symbols_batch

__all__ = ["DEFAULT_REF", "Fields", "LangRow", "SummaryRow", "Report", "gini", "script_of",
           "read_records", "read_texts", "train_substrates", "count_units", "metrics",
           "report"]

DEFAULT_REF = "eng"
BATCH_RECORDS = 4096  # records per kernel call
TRAINED = (("BBPE", "utf8"), ("BBPE16", "utf16"), ("UBE", "ube"))  # --train names


@dataclass(frozen=True)
class Fields:
    """Names of the record fields holding the alignment unit, the language and the text."""

    unit: str = "id"
    lang: str = "lang"
    text: str = "text"


@dataclass
class LangRow:
    tokenizer: str
    lang: str
    script: str
    utf8_len: int
    units: int
    shared_units: int
    tokens: int
    mean_tokens: float
    premium: Optional[float]
    floor: Optional[int]
    floor_premium: Optional[float]


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
    ref_tokens: int
    floor_gini: Optional[float]
    includes_ref: bool


@dataclass
class Report:
    ref_lang: str
    include_ref: bool
    languages: list  # LangRow, by tokenizer then lang
    summary: list  # SummaryRow, one per tokenizer
    notes: list = field(default_factory=list)

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


def train_substrates(texts, vocab_size, substrates=TRAINED):
    """``{name: BytePairTokenizer}`` trained at the same ``vocab_size`` on the same texts for
    each ``(name, substrate)``: the chunks are counted once and every substrate learns from
    those counts (as the paper compares BBPE, BBPE16 and UBE)."""
    from corpustok.bpe import BytePairTokenizer
    from corpustok.bpe_train import count_chunks, train_from_counts
    counts = count_chunks(texts)
    out = {}
    for name, substrate in substrates:
        vocab, merges = train_from_counts(counts, vocab_size, substrate=substrate)
        out[name] = BytePairTokenizer(vocab, merges, substrate=substrate)
    return out


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


def batch_counts(tokenizers, records, flds=Fields(), start=0):
    """``[((name, lang, unit), (tokens, floor))]`` for one batch of records: one
    ``encode_arrays`` call per tokenizer and one ``symbols_batch`` call per substrate (floor 0
    for tokenizers without a substrate). ``start`` numbers the records in errors."""
    units, langs, texts = _columns(records, flds, start)
    batch = utf8_batch(texts)
    floors = {}
    out = []
    for name, tok in tokenizers.items():
        _, offsets, _ = tok.encode_arrays(batch)
        tokens = np.diff(offsets).tolist()
        sub = _substrate(tok)
        if sub is None:
            floor = [0] * len(texts)
        else:
            if sub not in floors:
                floors[sub] = np.diff(symbols_batch(texts, sub).offsets.to_numpy()).tolist()
            floor = floors[sub]
        out.extend(((name, lang, unit), (t, f))
                   for lang, unit, t, f in zip(langs, units, tokens, floor))
    return out


def add_counts(a, b):
    """Element-wise sum of two count tuples (the CombinePerKey of the Beam form)."""
    return tuple(x + y for x, y in zip(a, b))


def lang_chars(records, flds=Fields(), start=0):
    """``[(lang, Counter of characters)]`` of one batch of records: what the script of each
    language is read from. Records are checked as :func:`batch_counts` checks them."""
    _, langs, texts = _columns(records, flds, start)
    chars = defaultdict(Counter)
    for lang, text in zip(langs, texts):
        chars[lang].update(text)
    return list(chars.items())


def count_units(tokenizers, records, flds=Fields(), batch_size=BATCH_RECORDS):
    """``(counts, chars)``: ``counts[(name, lang, unit)] = (tokens, floor)`` summed over the
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


def metrics(counts, chars, info, ref_lang=DEFAULT_REF, include_ref=False):
    """The :class:`Report` of ``counts`` (from :func:`count_units` or the Beam form).

    ``info``: ``{name: (substrate or None, vocab_size)}`` in report order. ``chars``:
    ``{lang: Counter}`` for the script columns.
    """
    per = defaultdict(dict)  # (name, lang) -> {unit: (tokens, floor)}
    for (name, lang, unit), value in counts.items():
        per[name, lang][unit] = value
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
        name_rows = []
        for lang in langs:
            units = per.get((name, lang))
            if units is None:
                continue
            shared = units.keys() & ref.keys()
            tok_sum = sum(v[0] for v in units.values())
            premium = _ratio(sum(units[u][0] for u in shared), sum(ref[u][0] for u in shared))
            floor = floor_premium = None
            if has_floor:
                floor = sum(v[1] for v in units.values())
                floor_premium = _ratio(sum(units[u][1] for u in shared),
                                       sum(ref[u][1] for u in shared))
            script, width = scripts.get(lang, ("Unknown", 0))
            name_rows.append(LangRow(name, lang, script, width, len(units), len(shared),
                                     tok_sum, tok_sum / len(units), premium, floor,
                                     floor_premium))
        rows.extend(name_rows)
        counted = [r for r in name_rows if r.premium is not None
                   and (include_ref or r.lang != ref_lang)]
        missing = sum(1 for r in name_rows if r.premium is None)
        if missing:
            notes.append(f"{name}: {missing} language(s) share no unit with {ref_lang!r} and "
                         "have no premium")
        prem = [r.premium for r in counted]
        top = max(counted, key=lambda r: r.premium, default=None)
        fl = [r.floor_premium for r in counted if r.floor_premium is not None]
        summary.append(SummaryRow(
            name, substrate or "", vocab_size, len(prem), gini(prem),
            float(np.mean(prem)) if prem else None, float(np.median(prem)) if prem else None,
            top.premium if top else None, top.lang if top else "",
            sum(v[0] for v in ref.values()), gini(fl) if has_floor and fl else None,
            include_ref))
    return Report(ref_lang, include_ref, rows, summary, notes)


def tokenizer_info(tokenizers):
    """``{name: (substrate or None, vocab_size)}`` for :func:`metrics`."""
    return {name: (_substrate(tok), int(tok.vocab_size)) for name, tok in tokenizers.items()}


def report(tokenizers, records, *, ref_lang=DEFAULT_REF, include_ref=False, flds=Fields(),
           batch_size=BATCH_RECORDS):
    """In-process report: ``tokenizers`` ``{name: tokenizer}``, ``records`` an iterable of
    dicts with the :class:`Fields`; returns a :class:`Report`."""
    if not tokenizers:
        raise ValueError("no tokenizer given")
    counts, chars = count_units(tokenizers, records, flds, batch_size)
    if not counts:
        raise ValueError("no records")
    return metrics(counts, chars, tokenizer_info(tokenizers), ref_lang, include_ref)
