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
counts with a CombinePerKey and feeds the same :func:`metrics`.
"""
import csv
import json
import os
import unicodedata
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, fields
from typing import Optional

import numpy as np

from ._arrow import utf8_batch
from ._io import open_text
from .ube import symbols_batch

__all__ = ["DEFAULT_REF", "Fields", "LangRow", "SummaryRow", "Report", "gini", "script_of",
           "read_records", "read_texts", "train_substrates", "count_units", "metrics",
           "report", "write_report"]

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
def read_records(paths):
    """Records (dicts) of JSONL files (plain, ``.gz``, ``.xz`` or ``.zst``); blank lines are
    skipped; ValueError names the file and line of malformed JSON."""
    for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        with open_text(os.fspath(path)) as f:
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
        with open_text(os.fspath(path)) as f:
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
    from .bpe import BytePairTokenizer
    from .bpe_train import count_chunks, train_from_counts
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


# ---- plots (matplotlib is imported by the caller, only when installed) ---------------------
def _premium_sorted(rep, ax):
    names = [s.tokenizer for s in rep.summary]
    first = {r.lang: r.premium for r in rep.rows(names[0]) if r.premium is not None}
    order = sorted(first, key=lambda lang: (first[lang], lang))
    for name in names:
        prem = {r.lang: r.premium for r in rep.rows(name)}
        ax.plot(range(len(order)), [prem.get(lang) or np.nan for lang in order], ".",
                markersize=3, label=name)
    ax.set_yscale("log")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xlabel(f"language (sorted by {names[0]} premium)")
    ax.set_ylabel(f"token premium vs {rep.ref_lang} (log)")
    ax.legend()


def _premium_by_script(rep, ax):
    names = [s.tokenizer for s in rep.summary]
    groups = defaultdict(lambda: defaultdict(list))
    for r in rep.languages:
        if r.premium is not None:
            groups[r.script][r.tokenizer].append(r.premium)
    scripts = sorted(groups, key=lambda s: (np.median(groups[s][names[0]] or [0]), s))
    width = 0.8 / len(names)
    x = np.arange(len(scripts))
    for k, name in enumerate(names):
        ax.bar(x + k * width, [np.median(groups[s][name]) if groups[s][name] else 0
                               for s in scripts], width, label=name)
    ax.set_xticks(x + 0.4 - width / 2)
    ax.set_xticklabels([f"{s} ({len(groups[s][names[0]])})" for s in scripts], rotation=90,
                       fontsize=7)
    ax.set_ylabel("median token premium")
    ax.set_xlabel("script (languages)")
    ax.legend()


def _saved(rep, pair, ax):
    rows = comparison(rep, pair)
    colors = {1: "tab:blue", 2: "tab:green", 3: "tab:red", 4: "tab:purple", 0: "grey"}
    ax.bar(range(len(rows)), [-d["change_pct"] for d in rows], width=1.0,
           color=[colors.get(d["utf8_len"], "grey") for d in rows])
    for w, c in colors.items():
        if any(d["utf8_len"] == w for d in rows):
            ax.bar([0], [0], color=c, label=f"{w}-byte letters" if w else "no letters")
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xlabel("language (sorted)")
    ax.set_ylabel(f"tokens saved by {pair[1]} vs {pair[0]} (%)")
    ax.legend()


def plot_all(rep, out_dir, pair):
    """PNG plots: premium per language sorted (one series per tokenizer), median premium by
    script, tokens saved by UBE vs BBPE per language; returns their paths."""
    import matplotlib.pyplot as plt
    jobs = [("premium_sorted.png", _premium_sorted, (10, 5)),
            ("premium_by_script.png", _premium_by_script, (14, 6))]
    if pair:
        jobs.append(("ube_vs_bbpe.png", lambda r, ax: _saved(r, pair, ax), (10, 5)))
    paths = []
    for fname, draw, size in jobs:
        fig, ax = plt.subplots(figsize=size)
        draw(rep, ax)
        fig.tight_layout()
        path = os.path.join(out_dir, fname)
        fig.savefig(path, dpi=80)
        plt.close(fig)
        paths.append(path)
    return paths


# ---- comparison and writers ----------------------------------------------------------------
def pick_pair(rep):
    """``(bbpe, ube)`` tokenizer names for the UBE-vs-BBPE comparison: the first ``utf8`` and
    the first ``ube`` tokenizer, or None when either is missing."""
    by_sub = {}
    for s in rep.summary:
        by_sub.setdefault(s.substrate, s.tokenizer)
    if "utf8" in by_sub and "ube" in by_sub:
        return by_sub["utf8"], by_sub["ube"]
    return None


def comparison(rep, pair):
    """Per language: tokens under both tokenizers of ``pair`` and the change
    ``100 * (tokens_ube / tokens_bbpe - 1)`` (negative: UBE saves tokens), by change."""
    base, other = ({r.lang: r for r in rep.rows(n)} for n in pair)
    out = []
    for lang, b in base.items():
        o = other.get(lang)
        if o is None or not b.tokens:
            continue
        out.append({"lang": lang, "script": b.script, "utf8_len": b.utf8_len,
                    f"tokens_{pair[0]}": b.tokens, f"tokens_{pair[1]}": o.tokens,
                    "change_pct": 100.0 * (o.tokens / b.tokens - 1.0)})
    return sorted(out, key=lambda d: (d["change_pct"], d["lang"]))


def _fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return v


def _write_csv(path, rows, header):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            w.writerow([_fmt(r[h]) for h in header])


GINI_NOTE = ("Gini G = sum_i sum_j |x_i - x_j| / (2 n^2 mean(x)) over the token premiums of "
             "n languages (population form)")


def _md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return lines


def _num(v, digits=4):
    return "" if v is None else f"{v:.{digits}f}"


def summary_markdown(rep, plots=(), title="Token-budget report"):
    """The Markdown summary: definitions, the per-tokenizer table, UBE vs BBPE."""
    ref = rep.ref_lang
    lines = [f"# {title}", "",
             f"- Reference language: `{ref}`; token premium of L = sum of L's tokens / sum of "
             f"`{ref}` tokens over the units both have.",
             f"- {GINI_NOTE}; `{ref}` is {'included' if rep.include_ref else 'excluded'} "
             f"(n = languages column).", ""]
    lines += _md_table(
        ["tokenizer", "substrate", "vocab", "languages", "Gini", "mean premium",
         "median premium", "max premium (lang)", f"{ref} tokens", "floor Gini"],
        [[s.tokenizer, s.substrate or "-", s.vocab_size, s.languages, _num(s.gini),
          _num(s.mean_premium, 3), _num(s.median_premium, 3),
          f"{_num(s.max_premium, 2)} ({s.max_premium_lang})", s.ref_tokens,
          _num(s.floor_gini)] for s in rep.summary])
    pair = pick_pair(rep)
    if pair:
        base, other = pair
        by = {s.tokenizer: s for s in rep.summary}
        rows = comparison(rep, pair)
        lines += ["", f"## {other} vs {base}", ""]
        if by[base].gini and by[other].gini is not None:
            lines.append(f"- Gini {by[base].gini:.4f} -> {by[other].gini:.4f} "
                         f"({100 * (by[other].gini / by[base].gini - 1):+.1f}%)")
        eng = [d for d in rows if d["lang"] == ref]
        if eng:
            lines.append(f"- `{ref}` tokens {eng[0][f'tokens_{base}']} -> "
                         f"{eng[0][f'tokens_{other}']} ({eng[0]['change_pct']:+.2f}%)")
        lines.append("- Change of tokens by the UTF-8 length of the language's letters:")
        lines.append("")
        groups = defaultdict(list)
        for d in rows:
            groups[d["utf8_len"]].append(d["change_pct"])
        lines += _md_table(["UTF-8 bytes/letter", "languages", "mean change %",
                            "median change %", "best change %", "worst change %"],
                           [[w, len(v), f"{np.mean(v):+.2f}", f"{np.median(v):+.2f}",
                             f"{min(v):+.2f}", f"{max(v):+.2f}"]
                            for w, v in sorted(groups.items())])
        lines += ["", "Largest savings:", ""]
        lines += _md_table(["lang", "script", f"{base} tokens", f"{other} tokens", "change %"],
                           [[d["lang"], d["script"], d[f"tokens_{base}"],
                             d[f"tokens_{other}"], f"{d['change_pct']:+.2f}"]
                            for d in rows[:12]])
        lines += ["", "Largest losses:", ""]
        lines += _md_table(["lang", "script", f"{base} tokens", f"{other} tokens", "change %"],
                           [[d["lang"], d["script"], d[f"tokens_{base}"],
                             d[f"tokens_{other}"], f"{d['change_pct']:+.2f}"]
                            for d in rows[::-1][:5]])
    if rep.notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in rep.notes]
    if plots:
        lines += ["", "Plots:", ""] + [f"![{os.path.basename(p)}]({os.path.basename(p)})"
                                       for p in plots]
    return "\n".join(lines) + "\n"


def write_report(rep, out_dir, plots=True, title="Token-budget report"):
    """Write ``languages.csv``, ``summary.csv``, ``comparison.csv`` (when a utf8 and a ube
    tokenizer are present), PNG plots (when matplotlib is installed and ``plots``) and
    ``summary.md`` into ``out_dir``; returns the written paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    lang_header = [f.name for f in fields(LangRow)]
    p = os.path.join(out_dir, "languages.csv")
    _write_csv(p, [asdict(r) for r in rep.languages], lang_header)
    paths.append(p)
    p = os.path.join(out_dir, "summary.csv")
    _write_csv(p, [asdict(s) for s in rep.summary], [f.name for f in fields(SummaryRow)])
    paths.append(p)
    pair = pick_pair(rep)
    if pair:
        p = os.path.join(out_dir, "comparison.csv")
        rows = comparison(rep, pair)
        _write_csv(p, rows, list(rows[0]) if rows else ["lang"])
        paths.append(p)
    pngs = []
    if plots:
        try:
            import matplotlib
        except ImportError:  # the optional "plot" extra
            rep.notes.append("plots skipped: matplotlib is not installed (pip install "
                             "'corpustok[plot]')")
        else:
            matplotlib.use("Agg")
            pngs = plot_all(rep, out_dir, pair)
    else:
        rep.notes.append("plots skipped (disabled)")
    p = os.path.join(out_dir, "summary.md")
    with open(p, "w", encoding="utf-8") as f:
        f.write(summary_markdown(rep, pngs, title))
    return paths + pngs + [p]
