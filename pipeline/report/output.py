"""Writing a token-budget report (:class:`corpustok.pipeline.report.metrics.Report`): per-language
and summary CSV files, the UBE-vs-BBPE comparison, a Markdown summary and, where matplotlib is
installed, the plots.

Language names. The records of an aligned corpus carry a language code (``lang``; the UDHR's
own codes such as ``007``, ``azj_cyrl``, ``cmn_hans_beijing``) and, in the UDHR data, a BCP-47
tag (``bcp47``), but no name. The names come from :data:`_LANG_NAMES`, a table of the UDHR
codes made offline by :func:`build_lang_names` from the BCP-47 tags of the embedded sample
(``corpustok/data/udhr_sample.jsonl``, all 532 languages) and Debian's ``iso-codes`` 4.15.0
(``/usr/share/iso-codes/json/iso_639-3.json``: the ISO 639-3 reference name of the tag's
language subtag, `` (macrolanguage)`` dropped). Tags whose language is ``und`` (10 numbered
UDHR texts) have no name. A code outside the table is looked up by its part before the first
``_`` (``fra_Latn`` -> French), else shown as the code. Plots and tables label a language
``Name (code)``: the code tells dialects and orthographies of one language apart.
"""
import csv
import functools
import json
import os
from collections import defaultdict
from dataclasses import asdict, fields

import numpy as np

from corpustok.pipeline.report.metrics import LangRow, SummaryRow

__all__ = ["lang_name", "lang_label", "build_lang_names", "comparison", "summary_markdown",
           "plot_all", "write_report"]


# ---- language names ------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _names():
    flat = " ".join(_LANG_NAMES.split())
    return dict(item.partition("=")[::2] for item in flat.split("; "))


def lang_name(code):
    """The English name of a language code (see the module docstring), or None."""
    names = _names()
    return names.get(code) or names.get(code.split("_", 1)[0])


def lang_label(code, width=None):
    """``Name (code)``, or the code alone without a name; the name cut to ``width``
    characters (with an ellipsis) when given."""
    name = lang_name(code)
    if not name:
        return code
    if width and len(name) > width:
        name = name[:width - 1] + "\u2026"
    return f"{name} ({code})"


def build_lang_names(records, iso_639_3="/usr/share/iso-codes/json/iso_639-3.json",
                     lang_field="lang", tag_field="bcp47"):
    """``{code: name}`` of records carrying a BCP-47 tag: the ISO 639-3 name (Debian's
    ``iso-codes`` JSON) of the tag's language subtag (two letters: ``alpha_2``, three:
    ``alpha_3``); ``und`` and unknown subtags are left out. How :data:`_LANG_NAMES` was made,
    from the embedded sample."""
    with open(iso_639_3, encoding="utf-8") as f:
        entries = json.load(f)["639-3"]
    iso = {}
    for e in entries:
        for key in ("alpha_3", "alpha_2"):
            if key in e:
                iso[e[key]] = e["name"].removesuffix(" (macrolanguage)")
    out = {}
    for rec in records:
        subtag = str(rec.get(tag_field) or "und").split("-", 1)[0]
        if subtag != "und" and subtag in iso:
            out[str(rec[lang_field])] = iso[subtag]
    return dict(sorted(out.items()))


# ---- plots (matplotlib is imported by the caller, only when installed) ---------------------
MAX_TICK_LABELS = 70  # a plot over more languages names every k-th one
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


def _lang_ticks(ax, langs, fontsize=7):
    """Name the languages along the x axis: all of them, or every k-th when there are more
    than :data:`MAX_TICK_LABELS` (the axis label says which)."""
    step = max(1, -(-len(langs) // MAX_TICK_LABELS))
    pos = list(range(0, len(langs), step))
    ax.set_xticks(pos)
    ax.set_xticklabels([lang_label(langs[k], 24) for k in pos], rotation=90, fontsize=fontsize)
    ax.set_xlim(-1, len(langs))
    return step


def _every(step):
    """The axis label's note on which languages are named."""
    if step == 1:
        return ""
    suffix = "th" if 10 <= step % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(step % 10, "th")
    return f", every {step}{suffix} named"


def _listing(ax, blocks, x, y, ha="left", va="bottom"):
    """A framed list of languages in axes coordinates ``(x, y)``: ``blocks`` is
    ``[(heading, [(lang, value text)])]``; names stay readable however close the points."""
    lines = []
    for heading, items in blocks:
        if items:
            lines += [heading] + [f"  {lang_label(lang, 30)}  {v}" for lang, v in items]
    if lines:
        ax.text(x, y, "\n".join(lines), transform=ax.transAxes, ha=ha, va=va, fontsize=8,
                family="DejaVu Sans", bbox={"boxstyle": "round", "facecolor": "white",
                                            "alpha": 0.9, "edgecolor": "0.7"})


def _premium_sorted(rep, fig, ax):
    """Premium per language, sorted by the first tokenizer's, one series per tokenizer
    (crosses: languages flagged for [UNK]); the first tokenizer's five highest and lowest
    listed in a box."""
    names = [s.tokenizer for s in rep.summary]
    by = {s.tokenizer: s for s in rep.summary}
    first = {r.lang: r.premium for r in rep.rows(names[0]) if r.premium is not None}
    order = sorted(first, key=lambda lang: (first[lang], lang))
    flagged_any = False
    for k, name in enumerate(names):
        rows = {r.lang: r for r in rep.rows(name)}
        color = COLORS[k % len(COLORS)]
        gini = by[name].gini
        ys = [rows[lang].premium if lang in rows and rows[lang].premium else np.nan
              for lang in order]
        flag = [lang in rows and rows[lang].unk_flagged for lang in order]
        ok = [np.nan if f else y for y, f in zip(ys, flag)]
        ax.plot(range(len(order)), ok, ".", markersize=4, color=color,
                label=name + ("" if gini is None else f" (Gini {gini:.3f})"))
        if any(flag):
            flagged_any = True
            ax.plot(range(len(order)), [y if f else np.nan for y, f in zip(ys, flag)], "x",
                    markersize=4, color=color)
    if flagged_any:
        ax.plot([], [], "x", color="grey",
                label=f"[UNK] > {rep.unk_flag:.0%} of bytes (premium mostly charged)")
    ax.set_yscale("log")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    step = _lang_ticks(ax, order, fontsize=6 if len(order) > 40 else 8)
    _listing(ax, [(f"Highest {names[0]} premium:",
                   [(lang, f"{first[lang]:.2f}") for lang in order[::-1][:5]]),
                  (f"Lowest {names[0]} premium:",
                   [(lang, f"{first[lang]:.2f}") for lang in order[:5]])], 1.005, 1.0,
             va="top")  # outside, right of the axes: the points run up to the corner
    ax.set_xlabel(f"language, sorted by {names[0]} premium ({len(order)} languages"
                  f"{_every(step)})")
    ax.set_ylabel(f"token premium vs {lang_label(rep.ref_lang)} (log scale)")
    ax.set_title(f"Token premium per language: tokens of the language / tokens of "
                 f"{lang_label(rep.ref_lang)} on the same units")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(axis="y", which="both", alpha=0.3)


def _premium_by_script(rep, fig, ax):
    """Median premium per script (bars per tokenizer), scripts by the first tokenizer's."""
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
                               for s in scripts], width, label=name,
               color=COLORS[k % len(COLORS)])
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks(x + 0.4 - width / 2)
    ax.set_xticklabels([f"{s} ({len(groups[s][names[0]])})" for s in scripts], rotation=60,
                       ha="right", rotation_mode="anchor",
                       fontsize=7 if len(scripts) > 30 else 9)
    ax.set_xlim(-0.5, len(scripts))
    ax.set_ylabel(f"median token premium vs {lang_label(rep.ref_lang)}")
    ax.set_xlabel("script of the language's letters (number of languages)")
    ax.set_title(f"Median token premium by script ({len(scripts)} scripts)")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(axis="y", alpha=0.3)


UTF8_COLORS = {1: "tab:blue", 2: "tab:green", 3: "tab:red", 4: "tab:purple", 0: "grey"}


def _saved(rep, fig, ax):
    """Tokens saved by UBE against its paired BBPE per language, sorted; the largest savings
    and losses named."""
    pair = rep.pair
    rows = comparison(rep)
    saved = [-d["change_pct"] for d in rows]
    ax.bar(range(len(rows)), saved, width=1.0,
           color=[UTF8_COLORS.get(d["utf8_len"], "grey") for d in rows])
    for w, c in UTF8_COLORS.items():
        if any(d["utf8_len"] == w for d in rows):
            ax.bar([0], [0], color=c, label=f"{w}-byte letters" if w else "no letters")
    ax.axhline(0, color="black", linewidth=0.6)
    langs = [d["lang"] for d in rows]
    step = _lang_ticks(ax, langs, fontsize=6 if len(langs) > 40 else 8)
    _listing(ax, [("Largest savings:", [(d["lang"], f"{-d['change_pct']:+.1f}%")
                                        for d in rows[:6] if d["change_pct"] < 0]),
                  ("Largest losses:", [(d["lang"], f"{-d['change_pct']:+.1f}%")
                                       for d in rows[::-1][:4] if d["change_pct"] > 0])],
             1.005, 1.0, va="top")  # outside, right of the axes: bars fill either end
    ax.set_xlabel(f"language, sorted by saving ({len(rows)} languages{_every(step)})")
    ax.set_ylabel(f"tokens saved by {pair.ube} vs {pair.bbpe} (%)")
    ax.set_title(f"Tokens saved by {pair.ube} against {pair.bbpe} per language\n"
                 f"{pair.provenance()}", fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def plot_all(rep, out_dir):
    """PNG plots: premium per language sorted (one series per tokenizer), median premium by
    script, and tokens saved by UBE against BBPE per language (only with ``rep.pair``);
    returns their paths."""
    import matplotlib.pyplot as plt  # here: optional (the plot extra), slow to import
    jobs = [("premium_sorted.png", _premium_sorted, (16, 7)),
            ("premium_by_script.png", _premium_by_script, (14, 6))]
    if rep.pair:
        jobs.append(("ube_vs_bbpe.png", _saved, (16, 7)))
    paths = []
    for fname, draw, size in jobs:
        fig, ax = plt.subplots(figsize=size)
        draw(rep, fig, ax)
        fig.tight_layout()
        path = os.path.join(out_dir, fname)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


# ---- comparison and writers ----------------------------------------------------------------
def comparison(rep, pair=None):
    """Per language: tokens under both tokenizers of ``pair`` (default ``rep.pair``) and the
    change ``100 * (tokens_ube / tokens_bbpe - 1)`` (negative: UBE saves tokens), by change.
    [] without a pair."""
    pair = pair or rep.pair
    if pair is None:
        return []
    base, other = ({r.lang: r for r in rep.rows(n)} for n in (pair.bbpe, pair.ube))
    out = []
    for lang, b in base.items():
        o = other.get(lang)
        if o is None or not b.charged_tokens:
            continue
        out.append({"lang": lang, "name": lang_name(lang) or "", "script": b.script,
                    "utf8_len": b.utf8_len, f"tokens_{pair.bbpe}": b.charged_tokens,
                    f"tokens_{pair.ube}": o.charged_tokens,
                    "change_pct": 100.0 * (o.charged_tokens / b.charged_tokens - 1.0)})
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


def _summary_table(rep):
    ref = rep.ref_lang
    return _md_table(
        ["tokenizer", "substrate", "vocab", "languages", "Gini", "mean premium",
         "median premium", "max premium (language)", f"{ref} tokens", "floor Gini", "[UNK]",
         f"languages > {rep.unk_flag:.0%} [UNK]"],
        [[s.tokenizer, s.substrate or "-", s.vocab_size, s.languages, _num(s.gini),
          _num(s.mean_premium, 3), _num(s.median_premium, 3),
          f"{_num(s.max_premium, 2)} ({lang_label(s.max_premium_lang)})", s.ref_tokens,
          _num(s.floor_gini), s.unk_tokens, s.unk_flagged] for s in rep.summary])


def _change_rows(rows, pair):
    return [[lang_label(d["lang"]), d["script"], d[f"tokens_{pair.bbpe}"],
             d[f"tokens_{pair.ube}"], f"{d['change_pct']:+.2f}"] for d in rows]


def _pair_markdown(rep):
    """The UBE-vs-BBPE section: what the pair shares, the Gini and reference changes, the
    change by UTF-8 length, the largest savings and losses."""
    pair, ref = rep.pair, rep.ref_lang
    base, other = pair.bbpe, pair.ube
    by = {s.tokenizer: s for s in rep.summary}
    rows = comparison(rep)
    lines = ["", f"## {other} vs {base}", "", f"- {pair.provenance()}"]
    if by[base].gini and by[other].gini is not None:
        lines.append(f"- Gini {by[base].gini:.4f} -> {by[other].gini:.4f} "
                     f"({100 * (by[other].gini / by[base].gini - 1):+.1f}%)")
    eng = [d for d in rows if d["lang"] == ref]
    if eng:
        lines.append(f"- `{ref}` tokens {eng[0][f'tokens_{base}']} -> "
                     f"{eng[0][f'tokens_{other}']} ({eng[0]['change_pct']:+.2f}%)")
    lines += ["- Change of tokens by the UTF-8 length of the language's letters:", ""]
    groups = defaultdict(list)
    for d in rows:
        groups[d["utf8_len"]].append(d["change_pct"])
    lines += _md_table(["UTF-8 bytes/letter", "languages", "mean change %", "median change %",
                        "best change %", "worst change %"],
                       [[w, len(v), f"{np.mean(v):+.2f}", f"{np.median(v):+.2f}",
                         f"{min(v):+.2f}", f"{max(v):+.2f}"] for w, v in sorted(groups.items())])
    header = ["language", "script", f"{base} tokens", f"{other} tokens", "change %"]
    lines += ["", "Largest savings:", ""] + _md_table(header, _change_rows(rows[:12], pair))
    lines += ["", "Largest losses:", ""] + _md_table(header, _change_rows(rows[::-1][:5], pair))
    return lines


def summary_markdown(rep, plots=(), title="Token-budget report"):
    """The Markdown summary: definitions, the training text, the per-tokenizer table, UBE vs
    BBPE (only for ``rep.pair``), notes and plots."""
    ref = rep.ref_lang
    lines = [f"# {title}", "",
             f"- Reference language: {lang_label(ref)}; token premium of L = sum of L's tokens "
             f"/ sum of `{ref}` tokens over the units both have.",
             f"- {GINI_NOTE}; `{ref}` is {'included' if rep.include_ref else 'excluded'} "
             f"(n = languages column).",
             "- [UNK]: a word a tokenizer maps to its unknown token is not encoded; the premium "
             "charges each [UNK] the UTF-8 bytes of the word it replaced, one token per byte, "
             "so that such text never looks cheap (`unk_tokens`, `unk_rate`, `unk_bytes`, "
             "`unk_byte_share`, `charged_tokens` in languages.csv). Languages with more than "
             f"{rep.unk_flag:.0%} of their bytes under [UNK] are flagged (`unk_flagged`) and "
             "stay in the Gini."]
    if rep.training:
        lines += [f"- {line}" for line in rep.training.describe()]
    lines.append("")
    lines += _summary_table(rep)
    if rep.pair:
        lines += _pair_markdown(rep)
    if rep.notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in rep.notes]
    if plots:
        lines += ["", "Plots:", ""] + [f"![{os.path.basename(p)}]({os.path.basename(p)})"
                                       for p in plots]
    return "\n".join(lines) + "\n"


def write_report(rep, out_dir, plots=True, title="Token-budget report"):
    """Write ``languages.csv`` (with a ``name`` column), ``summary.csv``, ``comparison.csv``
    (only for ``rep.pair``), PNG plots (when matplotlib is installed and ``plots``) and
    ``summary.md`` into ``out_dir``; returns the written paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    lang_header = [f.name for f in fields(LangRow)]
    lang_header.insert(lang_header.index("lang") + 1, "name")
    p = os.path.join(out_dir, "languages.csv")
    _write_csv(p, [dict(asdict(r), name=lang_name(r.lang) or "") for r in rep.languages],
               lang_header)
    paths.append(p)
    p = os.path.join(out_dir, "summary.csv")
    _write_csv(p, [asdict(s) for s in rep.summary], [f.name for f in fields(SummaryRow)])
    paths.append(p)
    if rep.pair:
        p = os.path.join(out_dir, "comparison.csv")
        rows = comparison(rep)
        _write_csv(p, rows, list(rows[0]) if rows else ["lang"])
        paths.append(p)
    pngs = []
    if plots:
        try:
            import matplotlib  # here: optional (the plot extra)
        except ImportError:  # the optional "plot" extra
            rep.notes.append("plots skipped: matplotlib is not installed (pip install "
                             "'corpustok[plot]')")
        else:
            matplotlib.use("Agg")
            pngs = plot_all(rep, out_dir)
    else:
        rep.notes.append("plots skipped (disabled)")
    p = os.path.join(out_dir, "summary.md")
    with open(p, "w", encoding="utf-8") as f:
        f.write(summary_markdown(rep, pngs, title))
    return paths + pngs + [p]


# ---- data ----------------------------------------------------------------------------------
# UDHR code -> ISO 639-3 name; made by build_lang_names (module docstring); "; "-separated.
_LANG_NAMES = """\
007=Sãotomense; 008=Upper Guinea Crioulo; 009=Kimbundu; 010=Tetun Dili; 011=Umbundu; 020=Drung;
027=Gumuz; 028=Kafa; 029=Sidamo; 030=Kituba (Democratic Republic of Congo); 032=South
Azerbaijani; 041=Latvian; 042=Spanish; 043=Zarma; 044=Mirandese; 045=Masai; 046=Papuan Malay;
047=Ambonese Malay; 048=Minangkabau; 049=Banjar; 052=Morisyen; 053=Hausa; 054=Catalan;
055=Jamaican Creole English; 056=Saint Lucian Creole French; 057=Maay; 058=Somali; 059=Northern
Sami; 060=Inari Sami; 061=Skolt Sami; 062=Swahili; 063=Swahili; 064=Dabarre; 065=Garre;
066=Jiiddu; 067=Finnish; 068=French; 069=Maori; 071=Kabyle; aar=Afar; abk=Abkhazian;
ace=Achinese; acu=Achuar-Shiwiar; acu_1=Achuar-Shiwiar; ada=Adangme; ady=Adyghe; afr=Afrikaans;
agr=Aguaruna; aii=Assyrian Neo-Aramaic; ajg=Aja (Benin); aka_akuapem=Akan; aka_asante=Akan;
aka_fante=Akan; als=Tosk Albanian; alt=Southern Altai; amc=Amahuaca; ame=Yanesha'; amh=Amharic;
ami=Amis; amr=Amarakaeri; arb=Arabic; arl=Arabela; arn=Mapudungun; ast=Asturian; auc=Waorani;
auv=Occitan (post 1500); ayo=Ayoreo; ayr=Aymara; azj_cyrl=Azerbaijani; azj_latn=Azerbaijani;
bam=Bambara; ban=Balinese; bax=Bamun; bba=Baatonum; bci=Baoulé; bcl=Bikol; bel=Belarusian;
bem=Bemba (Zambia); ben=Bengali; bfa=Bari; bho=Bhojpuri; bin=Bini; bis=Bislama; blt=Tai Dam;
blu=Hmong Njua; boa=Bora; bod=Tibetan; bos_cyrl=Bosnian; bos_latn=Bosnian; bre=Breton; btb=Bulu
(Cameroon); buc=Bushi; bug=Buginese; bul=Bulgarian; bvi=Belanda Viri; cab=Garifuna;
cak=Kaqchikel; cas=Tsimané; cat=Catalan; cbi=Chachi; cbr=Cashibo-Cacataibo; cbs=Cashinahua;
cbt=Chayahuita; cbu=Candoshi-Shapra; ccp=Chakma; ccx=Zhuang; ceb=Cebuano; ces=Czech;
cha=Chamorro; chj=Ojitlán Chinantec; chk=Chuukese; chr_cased=Cherokee; chr_uppercase=Cherokee;
chv=Chuvash; cic=Chickasaw; cjk=Chokwe; cjk_AO=Chokwe; cjs=Shor; cjy=Jinyu Chinese; ckb=Central
Kurdish; cmn_hans=Chinese; cmn_hans_beijing=Chinese; cmn_hans_guiyang=Chinese;
cmn_hans_harbin=Chinese; cmn_hans_nanjing=Chinese; cmn_hans_tianjin=Chinese; cmn_hant=Chinese;
cnh=Hakha Chin; cni=Asháninka; cnr=Montenegrin; cof=Colorado; cos=Corsican; cot=Caquinte;
cpu=Pichis Ashéninka; crh=Crimean Tatar; crs=Seselwa Creole French; csa=Chiltepec Chinantec;
csw=Swampy Cree; ctd=Tedim Chin; cym=Welsh; dag=Dagbani; dan=Danish; ddn=Dendi (Benin);
deu_1901=German; deu_1996=German; dga=Southern Dagaare; dip=Northeastern Dinka; div=Dhivehi;
dyo=Jola-Fonyi; dyu=Dyula; dzo=Dzongkha; ell_monotonic=Modern Greek (1453-);
ell_polytonic=Modern Greek (1453-); emk=Mandingo; eml=Romagnol; eng=English; epo=Esperanto;
ese=Ese Ejja; est=Estonian; eus=Basque; eve=Even; evn=Evenki; ewe=Ewe; fao=Faroese; fij=Fijian;
fin=Finnish; fkv=Kven Finnish; flm=Falam Chin; fon=Fon; fra=French; fri=Western Frisian;
fuf=Pular; fuf_adlm=Pular; fur=Friulian; fuv=Nigerian Fulfulde; fuv2=Nigerian Fulfulde; fvr=Fur;
gaa=Ga; gag=Gagauz; gan=Gan Chinese; gax=Oromo; gjn=Gonja; gkp=Guinea Kpelle; gla=Scottish
Gaelic; gld=Nanai; gle=Irish; glg=Galician; glv=Manx; gnw=Western Bolivian Guaraní; gsw1=Swiss
German; guc=Wayuu; gug=Guarani; guj=Gujarati; guu=Yanomamö; gyr=Guarayu; hak=Hakka Chinese;
hat_kreyol=Haitian; hat_popular=Haitian; hau_3=Hausa; hau_NE=Hausa; hau_NG=Hausa; haw=Hawaiian;
hea=Hmong; heb=Hebrew; hil=Hiligaynon; hin=Hindi; hlt=Matu Chin; hms=Southern Qiandong Miao;
hna=Gen; hni=Hani; hns=Caribbean Hindustani; hrv=Croatian; hsb=Upper Sorbian; hsf=Huastec;
hsn=Xiang Chinese; hun=Hungarian; hus=Huastec; huu=Murui Huitoto; hva=Huastec; hye=Armenian;
ibb=Ibibio; ibo=Igbo; ido=Ido; idu=Idoma; iii=Sichuan Yi; ijs=Southeast Ijo; ike=Inuktitut;
ilo=Iloko; ina=Interlingua (International Auxiliary Language Association); ind=Indonesian;
isl=Icelandic; ita=Italian; jav=Javanese; jav_java=Javanese; jiv=Shuar; jpn=Japanese;
jpn_osaka=Japanese; jpn_tokyo=Japanese; kaa=Kara-Kalpak; kal=Kalaallisut; kan=Kannada;
kat=Georgian; kaz=Kazakh; kbd=Kabardian; kbp=Kabiyè; kde=Makonde; kdh=Tem; kea=Kabuverdianu;
kek=Kekchí; kha=Khasi; khk=Mongolian; khk_mong=Mongolian; khm=Khmer; kin=Kinyarwanda;
kir=Kirghiz; kjh=Khakas; kkh_lana=Khün; kmb=Kimbundu; kmr=Kurdish; knc=Kanuri; kng=Kongo;
kng_AO=Kongo; koi=Komi-Permyak; koo=Konzo; kor=Korean; kqn=Kaonde; kqs=Northern Kissi; kri=Krio;
krl=Karelian; ktu=Kituba (Democratic Republic of Congo); kwi=Awa-Cuaiquer; lad=Ladino; lao=Lao;
lat=Latin; lat_1=Latin; lav=Latvian; lia=West-Central Limba; lij=Ligurian; lin=Lingala;
lin_tones=Lingala; lit=Lithuanian; lld=Ladin; lnc=Occitan (post 1500); lns=Lamnso'; lob=Lobi;
lot=Otuho; loz=Lozi; ltz=Luxembourgish; lua=Luba-Lulua; lue=Luvale; lug=Ganda; lun=Lunda;
lus=Lushai; mad=Madurese; mag=Magahi; mah=Marshallese; mai=Maithili; mal=Malayalam;
mal_chillus=Malayalam; mam=Mam; mar=Marathi; maz=Central Mazahua; mcd=Sharanahua; mcf=Matsés;
men=Mende (Sierra Leone); mfq=Moba; mic=Mi'kmaq; min=Minangkabau; miq=Mískito; mkd=Macedonian;
mlt=Maltese; mly_arab=Malay (individual language); mly_latn=Malay (individual language);
mnw=Mon; mor=Moro; mos=Mossi; mri=Maori; mto=Totontepec Mixe; mtp=Wichí Lhamtés Nocten;
mxi=Mozarabic; mxv=Metlatónoc Mixtec; mya=Burmese; mzi=Ixcatlán Mazatec; nan=Min Nan Chinese;
nav=Navajo; nba=Nyemba; nbl=South Ndebele; ndo=Ndonga; nds=Low German; nep=Nepali; nhn=Central
Nahuatl; nio=Nganasan; niu=Niuean; niv=Gilyak; njo=Ao Naga; nku=Bouna Kulango; nld=Dutch;
nno=Norwegian Nynorsk; nob=Norwegian Bokmål; not=Nomatsiguenga; nso=Pedi; nya_chechewa=Nyanja;
nya_chinyanja=Nyanja; nym=Nyamwezi; nyn=Nyankole; nzi=Nzima; oaa=Orok; oci_1=Arpitan;
oci_2=Arpitan; oci_3=Arpitan; oci_4=Arpitan; ojb=Northwestern Ojibwa; oki=Okiek; orh=Oroqen;
oss=Ossetian; ote=Mezquital Otomi; pam=Pampanga; pan=Panjabi; pap=Papiamento; pau=Palauan;
pbb=Páez; pbu=Pushto; pcd=Picard; pcm=Nigerian Pidgin; pes_1=Persian; pes_2=Persian; pis=Pijin;
piu=Pintupi-Luritja; plt=Malagasy; pnb=Lahnda; pol=Polish; pon=Pohnpeian; por_BR=Portuguese;
por_PT=Portuguese; pov=Upper Guinea Crioulo; ppl=Pipil; prv=Occitan (post 1500); quc=K'iche';
qud=Quechua; qug=Chimborazo Highland Quichua; qul=North Bolivian Quechua; quy=Ayacucho Quechua;
quz=Quechua; qva=Ambo-Pasco Quechua; qvc=Cajamarca Quechua; qvh=Huamalíes-Dos de Mayo Huánuco
Quechua; qvm=Margos-Yarowilca-Lauricocha Quechua; qvn=North Junín Quechua; qwh=Huaylas Ancash
Quechua; qxa=South Bolivian Quechua; qxn=Northern Conchucos Ancash Quechua; qxu=Arequipa-La
Unión Quechua; rar=Rarotongan; rmn=Balkan Romani; rmn_1=Balkan Romani; rmy=Macedo-Romanian;
roh=Romansh; roh_puter=Romansh; roh_rumgr=Romansh; roh_surmiran=Romansh; roh_sursilv=Romansh;
roh_sutsilv=Romansh; roh_vallader=Romansh; ron_1953=Romanian; ron_1993=Romanian;
ron_2006=Romanian; run=Rundi; rus=Russian; sag=Sango; sah=Yakut; san=Sanskrit;
san_gran=Sanskrit; sco=Scots; sey=Secoya; shk=Shilluk; shn=Shan; shp=Shipibo-Conibo;
sin=Sinhala; skr=Saraiki; slk=Slovak; slr=Salar; slv=Slovenian; sme=Northern Sami; smo=Samoan;
sna=Shona; snk=Soninke; snn=Siona; som=Somali; sot=Southern Sotho; spa=Spanish; src=Sardinian;
srp_cyrl=Serbian; srp_latn=Serbian; srq=Sirionó; srr=Serer; ssw=Swati; suk=Sukuma;
sun=Sundanese; sus=Susu; swb=Maore Comorian; swe=Swedish; swh=Swahili; tah=Tahitian; taj=Eastern
Tamang; tam=Tamil; tam_LK=Tamil; tat=Tatar; tbz=Ditammari; tca=Ticuna; tel=Telugu; tem=Timne;
tet=Tetum; tgk=Tajik; tgl=Tagalog; tgl_tglg=Tagalog; tha=Thai; tha2=Thai; tir=Tigrinya; tiv=Tiv;
tji=Northern Tujia; tly=Talysh; tna=Tacana; tob=Toba; toi=Tonga (Zambia); toj=Tojolabal;
ton=Tonga (Tonga Islands); top=Papantla Totonac; tpi=Tok Pisin; trn=Trinitario; tsn=Tswana;
tso_MZ=Tsonga; tso_ZW=Tsonga; tsz=Purepecha; tuk_cyrl=Turkmen; tuk_latn=Turkmen; tur=Turkish;
tyv=Tuvinian; tzc=Tzotzil; tzh=Tzeltal; tzm=Central Atlas Tamazight; tzm_tfng=Central Atlas
Tamazight; udu=Uduk; uig_arab=Uighur; uig_latn=Uighur; ukr=Ukrainian; umb=Umbundu; ura=Urarina;
urd=Urdu; urd_2=Urdu; uzn_cyrl=Uzbek; uzn_latn=Uzbek; vai=Vai; vec=Venetian; ven=Venda;
ven2=Venda; vep=Veps; vie=Vietnamese; vie_han=Vietnamese; vmw=Makhuwa; war=Waray (Philippines);
wln=Walloon; wol=Wolof; wuu=Wu Chinese; wwa=Waama; xho=Xhosa; xsm=Kasem; yad=Yagua; yao=Yao;
yap=Yapese; ydd=Yiddish; ykg=Northern Yukaghir; yor=Yoruba; yrk=Nenets; yua=Yucateco; yue=Yue
Chinese; yuz=Yuracare; zam=Miahuatlán Zapotec; zdj=Ngazidja Comorian; zgh=Standard Moroccan
Tamazight; zro=Záparo; ztu=Güilá Zapotec; zul=Zulu
"""
