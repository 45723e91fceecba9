"""Writing a token-budget report (:class:`corpustok.pipeline.report_metrics.Report`): per-language and summary
CSV files, the UBE-vs-BBPE comparison, a Markdown summary and, where matplotlib is installed,
the plots."""
import csv
import os
from collections import defaultdict
from dataclasses import asdict, fields

import numpy as np

from corpustok.pipeline.report_metrics import LangRow, SummaryRow


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
