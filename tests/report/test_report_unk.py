"""Report issue, item 1: ``[UNK]`` was counted as an efficient token, so BERT looked "cheaper
than English" on Myanmar, Thai and Khmer. Now each ``[UNK]`` is charged the UTF-8 bytes of the
word it replaced, and the UNK rate is reported per language and tokenizer.

Expected values are computed here, independently of the report: ``[UNK]`` ids are counted with
the tokenizer's own ``encode``, and the bytes under each ``[UNK]`` come from HF ``tokenizers``'
offsets (its BertWordPieceTokenizer, a separate implementation)."""
import argparse
import csv
import unicodedata
from collections import defaultdict

import pytest

import corpustok
from tests.conftest import TEST_DATA
from corpustok.pipeline.jobs.demo import sample_path
from corpustok.pipeline.report.metrics import read_records, report, unk_counts
from corpustok.arrow import utf8_batch
from tests.report.conftest import UNIT, gini_double_sum

VOCAB = TEST_DATA / "bert-base-uncased" / "vocab.txt"
REPRO = ("mya", "tha", "khm")  # Myanmar, Thai, Khmer


@pytest.fixture(scope="module")
def records():
    return list(read_records(sample_path()))


@pytest.fixture(scope="module")
def wp():
    return corpustok.load(str(VOCAB))


@pytest.fixture(scope="module")
def hf():
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.BertWordPieceTokenizer(str(VOCAB), lowercase=True)


def _hf_unk_bytes(hf, unk, text):
    """UTF-8 bytes under the ``[UNK]`` tokens of ``text`` by HF's offsets. HF's span of a word
    stops before trailing combining marks (Mn) that its ``strip_accents`` removed, though they
    belong to the word in the text; the span is extended over them."""
    enc = hf.encode(text, add_special_tokens=False)
    total = 0
    for i, (a, b) in zip(enc.ids, enc.offsets):
        if i == unk:
            while b < len(text) and unicodedata.category(text[b]) == "Mn":
                b += 1
            total += len(text[a:b].encode("utf-8"))
    return total


@pytest.fixture(scope="module")
def expected(records, wp, hf):
    """Per language ``{unit: dict(tokens, unk, unk_bytes, text_bytes)}``, independently."""
    unk = wp.token_to_id("[UNK]")
    out = defaultdict(dict)
    for r in records:
        ids = wp.encode(r["text"])
        out[r["lang"]][r["unit"]] = {
            "tokens": len(ids), "unk": ids.count(unk),
            "unk_bytes": _hf_unk_bytes(hf, unk, r["text"]),
            "text_bytes": len(r["text"].encode("utf-8"))}
    return out


def _sum(units, key, only=None):
    return sum(v[key] for u, v in units.items() if only is None or u in only)


def _charged(units, only=None):
    return _sum(units, "tokens", only) - _sum(units, "unk", only) + _sum(units, "unk_bytes", only)


def _premium(expected, lang, ref="eng"):
    shared = expected[lang].keys() & expected[ref].keys()
    return _charged(expected[lang], shared) / _charged(expected[ref], shared)



def test_bert_is_not_cheaper_than_english_on_myanmar_thai_khmer(records, wp, expected):
    """The repro: BERT (bert-base-uncased) on the UDHR sample. Counting each [UNK] as one
    token put Thai and Khmer at about 0.3 of English; the charged premium is far above 1."""
    rep = report({"BERT": wp}, records, flds=UNIT)
    rows = {r.lang: r for r in rep.rows("BERT")}
    eng = expected["eng"]
    assert _sum(eng, "unk") == 0 and rows["eng"].premium == 1.0
    for lang in REPRO:
        units, row = expected[lang], rows[lang]
        shared = units.keys() & eng.keys()
        as_before = _sum(units, "tokens", shared) / _sum(eng, "tokens", shared)
        # the tokenizer's own ids: what the report counts
        assert row.tokens == _sum(units, "tokens")
        assert row.unk_tokens == _sum(units, "unk") > 0
        assert row.unk_rate == pytest.approx(_sum(units, "unk") / _sum(units, "tokens"))
        assert row.unk_bytes == _sum(units, "unk_bytes")
        assert row.unk_byte_share == pytest.approx(
            _sum(units, "unk_bytes") / _sum(units, "text_bytes"))
        assert row.charged_tokens == _charged(units)
        assert row.premium == pytest.approx(_premium(expected, lang))
        assert row.premium > 10 * as_before and row.premium > 5  # not cheaper than English
        assert row.unk_flagged
    # the symptom of the issue, from the independent counts: one token per [UNK] made Thai and
    # Khmer look about three times cheaper than English
    for lang in ("tha", "khm"):
        shared = expected[lang].keys() & eng.keys()
        assert _sum(expected[lang], "tokens", shared) / _sum(eng, "tokens", shared) < 0.5
    note = next(n for n in rep.notes if n.startswith("BERT: [UNK]"))
    assert all(f"{lang} " in note for lang in ("khm", "mya"))


def test_gini_over_charged_premiums_of_every_language(records, wp, expected):
    """No language is left out for its [UNK]: the Gini is over all 531 non-reference
    languages, from the charged premiums computed independently."""
    rep = report({"BERT": wp}, records, flds=UNIT)
    (s,) = rep.summary
    prem = {lang: _premium(expected, lang) for lang in expected if lang != "eng"}
    assert s.languages == len(prem) == 531
    assert s.gini == pytest.approx(gini_double_sum(list(prem.values())), rel=1e-9)
    assert s.unk_tokens == sum(_sum(u, "unk") for u in expected.values())
    top = max(prem, key=prem.get)
    assert (s.max_premium_lang, s.max_premium) == (top, pytest.approx(prem[top]))
    share = {lang: _sum(u, "unk_bytes") / _sum(u, "text_bytes") for lang, u in expected.items()}
    assert s.unk_flagged == sum(1 for v in share.values() if v > 0.01)
    strict = report({"BERT": wp}, records, flds=UNIT, unk_flag=0.99)
    assert {r.lang for r in strict.rows("BERT") if r.unk_flagged} == {
        lang for lang, v in share.items() if v > 0.99}


def test_unk_columns_in_the_command_output(tmp_path, records, expected):
    """``corpustok report --tokenizer bert=vocab.txt``: languages.csv has the UNK columns,
    summary.csv the [UNK] total, summary.md the rule."""
    from corpustok.pipeline.report.job import add_report_parser, run_report
    parser = argparse.ArgumentParser(prog="corpustok")
    add_report_parser(parser.add_subparsers(dest="command"))
    out = tmp_path / "out"
    args = parser.parse_args(["report", sample_path(), "--unit-field", "unit", "--tokenizer",
                              f"bert={VOCAB}", "--no-plots", "--out", str(out)])
    assert run_report(args) == 0
    with open(out / "languages.csv", encoding="utf-8") as f:
        rows = {r["lang"]: r for r in csv.DictReader(f)}
    for lang in REPRO + ("eng",):
        units, row = expected[lang], rows[lang]
        assert int(row["tokens"]) == _sum(units, "tokens")
        assert int(row["unk_tokens"]) == _sum(units, "unk")
        assert int(row["unk_bytes"]) == _sum(units, "unk_bytes")
        assert int(row["charged_tokens"]) == _charged(units)
        assert float(row["premium"]) == pytest.approx(_premium(expected, lang), rel=1e-5)
        assert row["unk_flagged"] == str(lang != "eng")
    with open(out / "summary.csv", encoding="utf-8") as f:
        (summ,) = list(csv.DictReader(f))
    assert int(summ["unk_tokens"]) == sum(_sum(u, "unk") for u in expected.values())
    md = (out / "summary.md").read_text("utf-8")
    assert "charges each [UNK] the UTF-8 bytes of the word it replaced" in md


EDGE_TEXTS = [
    "abc \u200bကမ္ဘာ\u200c def",  # zero-width space and non-joiner at a word's edges
    "ab\x00cd ภาษาไทย!ภาษา,ไทย",  # a removed control inside a word; punctuation between
    "日本語 ꦏꦧꦺꦃ ꪩꪾ and ܗܟ̰",  # CJK characters alone; trailing combining marks
    "x" * 150 + " " + "ก" * 3,  # a word over max_input_chars_per_word is one [UNK]
    "\ue000ሰላም\ue001 naïve ẞ ǅ",  # private-use characters (removed) at the edges
    "",
]


def test_unk_bytes_match_hf_offsets_on_edge_cases(wp, hf):
    unk = wp.token_to_id("[UNK]")
    ids, offsets, _ = wp.encode_arrays(utf8_batch(EDGE_TEXTS))
    unk_tokens, unk_bytes = unk_counts(wp, EDGE_TEXTS, ids, offsets)
    assert unk_tokens.tolist() == [wp.encode(t).count(unk) for t in EDGE_TEXTS]
    assert unk_bytes.tolist() == [_hf_unk_bytes(hf, unk, t) for t in EDGE_TEXTS]
    assert unk_tokens[3] >= 1 and unk_bytes[3] >= 150


def test_unk_bytes_match_hf_on_every_sample_record(records, wp, hf):
    """Every record of the sample, in batches as the report counts them."""
    from corpustok.pipeline.report.metrics import count_units
    counts, _ = count_units({"B": wp}, records, UNIT, batch_size=300)
    unk = wp.token_to_id("[UNK]")
    for r in records:
        c = counts["B", r["lang"], r["unit"]]
        assert (c.unk_tokens, c.unk_bytes) == (wp.encode(r["text"]).count(unk),
                                               _hf_unk_bytes(hf, unk, r["text"])), r["id"]
