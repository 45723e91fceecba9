"""Report issue, item 4: plots without language names, titles or readable labels. Now every plot
has a title and axis labels, names languages ``Name (code)`` (names from Debian's iso-codes
ISO 639-3 table through the UDHR records' BCP-47 tags, embedded in report_output), lists the
extreme languages by name, and its tick labels neither overlap nor miss glyphs.

The figures are inspected as matplotlib drew them (``plt.close`` is intercepted); expected
names are written out here or read from iso-codes, expected extremes computed with
``encode``."""
import json
import os
import warnings

import pytest

import corpustok
from corpustok import BytePairTokenizer
from tests.conftest import TEST_DATA
from corpustok.pipeline.jobs.demo import sample_path
from corpustok.pipeline.report.metrics import make_pair, read_records, report, \
    tokenizer_info
from corpustok.pipeline.report.output import build_lang_names, lang_label, lang_name, \
    write_report
from tests.report.conftest import UNIT

ISO_639_3 = "/usr/share/iso-codes/json/iso_639-3.json"


def test_known_language_names():
    want = {"eng": "English", "mya": "Burmese", "tha": "Thai", "khm": "Khmer",
            "fra": "French", "rus": "Russian", "cmn_hans": "Chinese", "cmn_hant": "Chinese",
            "azj_cyrl": "Azerbaijani", "por_BR": "Portuguese", "kor": "Korean",
            "deu_1996": "German", "iii": "Sichuan Yi", "chr_cased": "Cherokee"}
    assert {code: lang_name(code) for code in want} == want
    assert lang_label("mya") == "Burmese (mya)"
    assert lang_label("fra_Latn") == "French (fra_Latn)"  # the part before "_"
    assert lang_label("013") == "013" and lang_name("xx_yy") is None  # no name: the code
    assert lang_label("030", 10) == "Kituba (D\u2026 (030)"


@pytest.mark.skipif(not os.path.exists(ISO_639_3), reason="Debian iso-codes not installed")
def test_names_are_iso_639_3_names_of_the_bcp47_tags():
    """Every UDHR code of the sample: the ISO 639-3 name of its BCP-47 language subtag (the
    script and region subtags are not part of the name; ``und`` has none). The embedded table
    is what build_lang_names makes from the sample, so it can be made again."""
    with open(ISO_639_3, encoding="utf-8") as f:
        iso = {}
        for e in json.load(f)["639-3"]:
            iso[e["alpha_3"]] = iso[e.get("alpha_2", e["alpha_3"])] = e["name"]
    tags = {r["lang"]: r["bcp47"] for r in read_records(sample_path())}
    assert len(tags) == 532
    for code, tag in tags.items():
        sub = tag.split("-")[0]
        want = None if sub == "und" else iso[sub].replace(" (macrolanguage)", "")
        assert lang_name(code) == want, code
    assert sum(lang_name(c) is None for c in tags) == 10
    table = build_lang_names(read_records(sample_path()), ISO_639_3)
    assert table == {c: lang_name(c) for c in sorted(tags) if lang_name(c)}


@pytest.fixture(scope="module")
def sample():
    recs = list(read_records(sample_path()))
    langs = sorted({r["lang"] for r in recs})
    keep = set(langs[::4]) | {"eng", "mya", "tha", "khm", "iii", "kor", "jpn"}
    return [r for r in recs if r["lang"] in keep]


@pytest.fixture(scope="module")
def drawn(tmp_path_factory, sample, monkeypatch_module):
    """The figures of a report on ~140 languages: BBPE and UBE (paired) and BERT."""
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    texts = [r["text"] for r in sample]
    toks = {"BBPE": BytePairTokenizer.train(texts, 700, substrate="utf8"),
            "UBE": BytePairTokenizer.train(texts, 700, substrate="ube"),
            "BERT": corpustok.load(str(TEST_DATA / "bert-base-uncased" / "vocab.txt"))}
    rep = report(toks, sample, flds=UNIT)
    rep.pair = make_pair(tokenizer_info(toks), "BBPE", "UBE", origin="trained")
    figures = []
    close = plt.close
    monkeypatch_module.setattr(plt, "close", lambda fig: (figures.append(fig), None)[1])
    out = tmp_path_factory.mktemp("plots")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        paths = write_report(rep, out)
        for fig in figures:
            fig.canvas.draw()
    names = [os.path.basename(p) for p in paths if p.endswith(".png")]
    yield dict(zip(names, figures)), toks, sample, caught, out
    for fig in figures:
        close(fig)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _unit_tokens(tok, records):
    """``{lang: {unit: tokens}}`` by the tokenizer's own encode."""
    out = {}
    for r in records:
        out.setdefault(r["lang"], {})[r["unit"]] = len(tok.encode(r["text"]))
    return out


def _premiums(tok, records):
    """Premium per language; English has every unit, so the shared units are the language's."""
    t = _unit_tokens(tok, records)
    return {lang: sum(u.values()) / sum(t["eng"][k] for k in u) for lang, u in t.items()}


def _texts(fig):
    ax = fig.axes[0]
    return ax, "\n".join(t.get_text() for t in ax.texts)


def test_every_plot_has_title_axis_labels_and_legend(drawn):
    figs, _, _, caught, out = drawn
    assert set(figs) == {"premium_sorted.png", "premium_by_script.png", "ube_vs_bbpe.png"}
    for name, fig in figs.items():
        ax = fig.axes[0]
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel(), name
        assert ax.get_legend() is not None, name
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
    assert "Token premium per language" in figs["premium_sorted.png"].axes[0].get_title()
    assert "English (eng)" in figs["premium_sorted.png"].axes[0].get_ylabel()
    assert "trained by this report on the same text" in figs["ube_vs_bbpe.png"].axes[0] \
        .get_title()
    assert not [w for w in caught if "Glyph" in str(w.message)]  # every name can be drawn


def test_languages_are_named_on_the_axes(drawn):
    figs, _, sample, _, _ = drawn
    n_langs = len({r["lang"] for r in sample})
    for name in ("premium_sorted.png", "ube_vs_bbpe.png"):
        ax = figs[name].axes[0]
        labels = [t.get_text() for t in ax.get_xticklabels()]
        step = -(-n_langs // 70)
        assert len(labels) == len(range(0, n_langs, step)) <= 70
        assert f"every {step}{'nd' if step == 2 else 'th'} named" in ax.get_xlabel()
        named = [lab for lab in labels if lab.endswith(")") and " (" in lab]
        assert len(named) >= 0.9 * len(labels)  # "Name (code)"; the few `und` codes bare
        for lab in named:
            code = lab.rsplit(" (", 1)[1][:-1]
            assert lab.startswith(lang_name(code)[:23]), lab


def test_tick_labels_are_readable(drawn):
    """No two tick labels overlap and none is smaller than 6 points."""
    figs, *_ = drawn
    for name, fig in figs.items():
        ax = fig.axes[0]
        renderer = fig.canvas.get_renderer()
        boxes = sorted((t.get_window_extent(renderer) for t in ax.get_xticklabels()
                        if t.get_text()), key=lambda b: b.x0)
        assert all(t.get_fontsize() >= 6 for t in ax.get_xticklabels()), name
        for a, b in zip(boxes, boxes[1:]):
            assert a.x1 <= b.x0 + 0.5, (name, a, b)


def test_extremes_are_listed_by_name(drawn):
    figs, toks, sample, _, _ = drawn
    prem = _premiums(toks["BBPE"], sample)
    top = sorted(prem, key=lambda lang: (-prem[lang], lang))[:5]
    _, text = _texts(figs["premium_sorted.png"])
    assert "Highest BBPE premium:" in text
    for lang in top:
        assert f"{lang_label(lang, 30)}  {prem[lang]:.2f}" in text
    bbpe, ube = (_unit_tokens(toks[n], sample) for n in ("BBPE", "UBE"))
    saved = {lang: 1 - sum(ube[lang].values()) / sum(bbpe[lang].values()) for lang in bbpe}
    _, text = _texts(figs["ube_vs_bbpe.png"])
    assert "Largest savings:" in text
    for lang in sorted(saved, key=lambda lang: (-saved[lang], lang))[:6]:
        assert f"{lang_label(lang, 30)}  {100 * saved[lang]:+.1f}%" in text


def test_a_few_languages_are_all_named(tmp_path):
    """A small report names every language."""
    pytest.importorskip("matplotlib")
    recs = [{"unit": u, "lang": lang, "text": t * k} for u, t in (("a", "Hello world. "),
                                                                 ("b", "Ünïcödé ẞ "))
            for k, lang in ((1, "eng"), (2, "fra"), (3, "mya"), (4, "013"))]
    tok = BytePairTokenizer.train(["x"], 256, substrate="utf8")
    rep = report({"B": tok}, recs, flds=UNIT)
    import matplotlib
    matplotlib.use("Agg")
    from corpustok.pipeline.report.output import _premium_sorted
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    _premium_sorted(rep, fig, ax)
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "English (eng)", "French (fra)", "Burmese (mya)", "013"]
    plt.close(fig)
