"""Token-budget report: metrics on hand-computed examples, floors against Python's codecs,
in-process vs Beam equality, writers and the ``report --train`` command on the embedded
UDHR sample."""
import argparse
import csv
import gzip
import json
import lzma
import random
from collections import Counter
from pathlib import Path

import pytest

import corpustok
from corpustok import BytePairTokenizer
from corpustok.pipeline.jobs.demo import sample_path
from tests.conftest import TEST_DATA
from corpustok.pipeline.report.metrics import (count_units, gini, holdout_units, make_pair,
                                               read_records, read_texts, report, script_of,
                                               tokenizer_info)
from corpustok.pipeline.report.output import write_report
from tests.report.conftest import UNIT, gini_double_sum

SAMPLE = sample_path()


def _bytes_tok(substrate):
    """A BPE tokenizer with no merges: its tokens are exactly the substrate's base symbols,
    so token counts are known from Python's codecs."""
    size = 512 if substrate == "ube" else 256
    return BytePairTokenizer.train(["x"], size, substrate=substrate)


def _ube_len(text):
    return sum(len(c.encode("utf-8")) if len(c.encode("utf-8")) <= 2
               else len(c.encode("utf-16-le")) for c in text)


FLOOR = {"utf8": lambda t: len(t.encode("utf-8")),
         "utf16": lambda t: len(t.encode("utf-16-le")),
         "ube": _ube_len}


@pytest.fixture(scope="module")
def sample():
    recs = list(read_records(SAMPLE))
    langs = sorted({r["lang"] for r in recs})
    keep = set(langs[::12]) | {"eng", "cmn_hans", "kor", "rus", "jpn", "hin"}
    return [r for r in recs if r["lang"] in keep]


@pytest.fixture(scope="module")
def trained(sample):
    return {name: BytePairTokenizer.train((r["text"] for r in sample), 700, substrate=sub)
            for name, sub in (("BBPE", "utf8"), ("UBE", "ube"))}


# ---- Gini ----------------------------------------------------------------------------------

def test_gini_hand_examples():
    assert gini([1.3, 1.3, 1.3, 1.3]) == pytest.approx(0.0, abs=1e-15)
    # [1, 3]: sum |xi - xj| over ordered pairs = 4, 2 n^2 mean = 2 * 4 * 2 = 16.
    assert gini([1.0, 3.0]) == pytest.approx(0.25)
    # [1, 2, 3]: pairs 1+2+1, twice = 8; 2 * 9 * 2 = 36.
    assert gini([3.0, 1.0, 2.0]) == pytest.approx(2 / 9)
    # one language pays everything: (n - 1) / n
    assert gini([0, 0, 0, 5]) == pytest.approx(3 / 4)
    assert gini([]) is None
    assert gini([0.0, 0.0]) == 0.0


def test_gini_equals_double_sum_formula():
    rng = random.Random(6)
    for n in (1, 2, 3, 10, 101):
        x = [rng.uniform(0.5, 6.0) for _ in range(n)]
        assert gini(x) == pytest.approx(gini_double_sum(x), rel=1e-12)


# ---- premiums on hand-made corpora ---------------------------------------------------------
def _rec(unit, lang, text):
    return {"id": unit, "lang": lang, "text": text}


HAND = [_rec("u1", "eng", "ab"), _rec("u2", "eng", "abcd"),
        _rec("u1", "fra", "abc"), _rec("u3", "fra", "zzzzzzz"),  # u3: no English -> not shared
        _rec("u1", "deu", "a"), _rec("u2", "deu", "abcdef"),
        _rec("u9", "xxx", "lonely")]  # shares no unit with eng -> no premium


def test_premium_over_shared_units_only():
    rep = report({"B": _bytes_tok("utf8")}, HAND)
    rows = {r.lang: r for r in rep.rows("B")}
    assert rows["fra"].premium == pytest.approx(3 / 2)  # u1 only: 3 / 2, not 10 / 6
    assert (rows["fra"].units, rows["fra"].shared_units, rows["fra"].tokens) == (2, 1, 10)
    assert rows["fra"].mean_tokens == 5.0
    assert rows["deu"].premium == pytest.approx(7 / 6)
    assert rows["eng"].premium == 1.0
    assert rows["xxx"].premium is None and rows["xxx"].shared_units == 0
    assert any("xxx" not in n and "1 language" in n for n in rep.notes)
    (s,) = rep.summary
    # English excluded, xxx has no premium: Gini of [3/2, 7/6]: |d| = 1/3 twice over
    # 2 * 4 * 4/3 = 32/3 -> 1/16.
    assert (s.languages, s.includes_ref) == (2, False)
    assert s.gini == pytest.approx(1 / 16)
    assert s.mean_premium == pytest.approx((3 / 2 + 7 / 6) / 2)
    assert (s.max_premium_lang, s.ref_tokens) == ("fra", 6)


def test_include_ref_counts_english():
    rep = report({"B": _bytes_tok("utf8")}, HAND, include_ref=True)
    (s,) = rep.summary
    # [1, 3/2, 7/6]: pairs 1/2 + 1/6 + 1/3 = 1, twice = 2; mean 11/9 -> 2 / (2 * 9 * 11/9).
    assert (s.languages, s.includes_ref) == (3, True)
    assert s.gini == pytest.approx(1 / 11)


def test_ref_lang_option_and_errors():
    rep = report({"B": _bytes_tok("utf8")}, HAND, ref_lang="fra")
    rows = {r.lang: r for r in rep.rows("B")}
    assert rows["eng"].premium == pytest.approx(2 / 3)
    assert rows["deu"].premium == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="reference language 'spa'"):
        report({"B": _bytes_tok("utf8")}, HAND, ref_lang="spa")
    with pytest.raises(ValueError, match=r"record 1 lacks a field.*--unit-field"):
        report({"B": _bytes_tok("utf8")}, [HAND[0], {"lang": "eng", "text": "a"}])
    with pytest.raises(TypeError, match="record 0: field 'text'"):
        report({"B": _bytes_tok("utf8")}, [{"id": 1, "lang": "eng", "text": 5}])
    with pytest.raises(ValueError, match="record 1: field 'lang' is null"):
        report({"B": _bytes_tok("utf8")}, [HAND[0], {"id": "u9", "lang": None, "text": "a"}])


def test_duplicate_records_of_a_unit_are_summed():
    recs = HAND + [_rec("u1", "fra", "de")]
    rows = {r.lang: r for r in report({"B": _bytes_tok("utf8")}, recs).rows("B")}
    assert rows["fra"].premium == pytest.approx(5 / 2)
    assert rows["fra"].units == 2


def test_floor_matches_python_codecs_per_substrate():
    texts = ["Hello", "Ünïcödé", "日本語テキスト", "😀 emoji 👍🏽", "한국어", ""]
    recs = [_rec(str(i), lang, t) for i, t in enumerate(texts) for lang in ("eng", "mix")]
    recs = [r if r["lang"] == "eng" else dict(r, text=r["text"] * 2) for r in recs]
    toks = {sub: _bytes_tok(sub) for sub in ("utf8", "utf16", "ube")}
    rep = report(toks, recs)
    for sub, f in FLOOR.items():
        rows = {r.lang: r for r in rep.rows(sub)}
        want = sum(f(t) for t in texts)
        # zero merges: tokens are the base symbols, so tokens == floor == codec length
        assert rows["eng"].floor == rows["eng"].tokens == want
        assert rows["mix"].floor == 2 * want
        assert rows["mix"].premium == rows["mix"].floor_premium == pytest.approx(2.0)


def test_wordpiece_has_no_floor():
    wp = corpustok.load(str(TEST_DATA / "bert-base-uncased" / "vocab.txt"))
    rep = report({"wp": wp}, HAND)
    rows = {r.lang: r for r in rep.rows("wp")}
    assert rows["fra"].floor is None and rows["fra"].floor_premium is None
    assert rows["fra"].tokens == len(wp.encode("abc")) + len(wp.encode("zzzzzzz"))
    assert rep.summary[0].floor_gini is None and rep.summary[0].substrate == ""


def test_counts_equal_per_text_encode(sample, trained):
    counts, _ = count_units(trained, sample, UNIT, batch_size=257)
    for rec in sample[::40]:
        for name, tok in trained.items():
            c = counts[name, rec["lang"], rec["unit"]]
            assert c.tokens == c.charged == len(tok.encode(rec["text"]))
            assert c.floor == FLOOR[tok.substrate](rec["text"])
            assert (c.unk_tokens, c.unk_bytes) == (0, 0)  # byte-level: nothing is unknown
            assert c.text_bytes == len(rec["text"].encode("utf-8"))


def test_bbpe_counts_equal_hf_byte_level_bpe(sample, trained):
    """Reference: HF tokenizers' BPE with a ByteLevel pre-tokenizer (GPT-2 split and byte
    table) built from the same vocab and merges counts the same tokens per record."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    tok = trained["BBPE"]
    hf = Tokenizer(models.BPE(tok.vocab, [tuple(m) for m in tok.merges]))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    counts, _ = count_units({"BBPE": tok}, sample, UNIT)
    recs = sample[::7]
    want = [len(e.ids) for e in hf.encode_batch([r["text"] for r in recs])]
    assert [counts["BBPE", r["lang"], r["unit"]].tokens for r in recs] == want


def test_script_of():
    assert script_of(Counter("Hello, world! 123")) == ("Latin", 1)
    assert script_of(Counter("Привет, мир")) == ("Cyrillic", 2)
    assert script_of(Counter("人人生而自由")) == ("Cjk", 3)
    assert script_of(Counter("모든 인간은")) == ("Hangul", 3)
    assert script_of(Counter("𐌰𐌱𐌲 a")) == ("Gothic", 4)
    assert script_of(Counter("123 !?")) == ("Unknown", 0)


# ---- input readers -------------------------------------------------------------------------
def test_read_records_compressed_and_errors(tmp_path):
    lines = [json.dumps(r) for r in HAND]
    for name, opener in (("a.jsonl", open), ("a.jsonl.gz", gzip.open),
                         ("a.jsonl.xz", lzma.open)):
        with opener(tmp_path / name, "wt", encoding="utf-8") as f:
            f.write("\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:]) + "\n")
        assert list(read_records(tmp_path / name)) == HAND
    (tmp_path / "bad.jsonl").write_text(lines[0] + "\n{oops\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not JSON"):
        list(read_records(tmp_path / "bad.jsonl"))


def test_read_texts_pieces_and_limit(tmp_path):
    text = "".join(f"line {i} ünï\n" for i in range(1000))
    path = tmp_path / "t.txt.xz"
    with lzma.open(path, "wt", encoding="utf-8") as f:
        f.write(text)
    pieces = list(read_texts([path], piece_bytes=100))
    assert "".join(pieces) == text and all(p.endswith("\n") for p in pieces)
    cut = "".join(read_texts([path], max_bytes=1000, piece_bytes=100))
    assert text.startswith(cut) and 1000 - 20 < len(cut) <= 1000 and cut.endswith("\n")


# ---- Beam == in-process --------------------------------------------------------------------
def test_beam_equals_in_process(tmp_path, sample, trained):
    from corpustok.pipeline.report.job import beam_report
    wp = corpustok.load(str(TEST_DATA / "bert-base-uncased" / "vocab.txt"))  # with [UNK]
    toks = dict(trained, UTF16=_bytes_tok("utf16"), BERT=wp)
    half = len(sample) // 2
    paths = [tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl"]
    with gzip.open(paths[0], "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in sample[:half])
    paths[1].write_text("".join(json.dumps(r) + "\n" for r in sample[half:]), "utf-8")
    for include_ref in (False, True):
        local = report(toks, sample, flds=UNIT, include_ref=include_ref)
        beam = beam_report(toks, paths, flds=UNIT, include_ref=include_ref, batch_size=300)
        assert beam.languages == local.languages
        assert beam.summary == local.summary
        assert beam.notes == local.notes
    assert len(local.summary) == 4 and local.summary[0].languages > 40
    assert local.summary[3].unk_tokens > 0
    # the held-out units of --train: the Beam job filters records as the in-process form does
    units = ["udhr:art01"]
    local = report(toks, sample, flds=UNIT, units=units)
    beam = beam_report(toks, paths, flds=UNIT, units=units, batch_size=300)
    assert beam.languages == local.languages and beam.summary == local.summary
    assert {r.units for r in local.languages} == {1}


# ---- writers and the command ---------------------------------------------------------------
def test_writers(tmp_path, sample, trained):
    rep = report(trained, sample, flds=UNIT)
    rep.pair = make_pair(tokenizer_info(trained), "BBPE", "UBE", origin="user")
    paths = write_report(rep, tmp_path, plots=False)
    names = {Path(p).name for p in paths}
    assert {"languages.csv", "summary.csv", "comparison.csv", "summary.md"} <= names
    with open(tmp_path / "languages.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(rep.languages) == 2 * len({r["lang"] for r in sample})
    assert list(rows[0])[:9] == ["tokenizer", "lang", "name", "script", "utf8_len", "units",
                                 "shared_units", "text_bytes", "tokens"]
    eng = next(r for r in rows if r["tokenizer"] == "UBE" and r["lang"] == "eng")
    assert float(eng["premium"]) == 1.0 and int(eng["floor"]) > int(eng["tokens"])
    with open(tmp_path / "summary.csv", encoding="utf-8") as f:
        summ = list(csv.DictReader(f))
    assert [s["tokenizer"] for s in summ] == ["BBPE", "UBE"]
    assert float(summ[0]["gini"]) == pytest.approx(rep.summary[0].gini, rel=1e-5)
    md = (tmp_path / "summary.md").read_text("utf-8")
    assert "eng` is excluded" in md and "UBE vs BBPE" in md and "plots skipped" in md
    assert "paired by the user (--pair)" in md


def _cli(argv):
    from corpustok.pipeline.report.job import add_report_parser, run_report
    parser = argparse.ArgumentParser(prog="corpustok")
    add_report_parser(parser.add_subparsers(dest="command"))
    return parser, parser.parse_args(["report", *argv]), run_report


def test_help_explains_every_option():
    parser, _, _ = _cli([str(SAMPLE), "--out", "x", "--train", "--vocab-size", "600"])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    rp = sub.choices["report"]
    for action in rp._actions:
        assert action.help, action.option_strings
    text = rp.format_help()
    for opt in ("--tokenizer", "--train", "--vocab-size", "--train-text", "--ref-lang",
                "--include-ref", "--beam", "--out", "Gini", "--heldout", "--pair",
                "--unk-flag", "[UNK]"):
        assert opt in text


def test_cli_train_end_to_end(tmp_path, sample, trained):
    pytest.importorskip("matplotlib")
    src = tmp_path / "par.jsonl.xz"
    with lzma.open(src, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in sample)
    trained["BBPE"].save(tmp_path / "mine.json")
    out = tmp_path / "out"
    _, args, run = _cli([str(src), "--unit-field", "unit", "--train", "--vocab-size", "600",
                         "--tokenizer", f"Mine={tmp_path / 'mine.json'}", "--out", str(out)])
    assert run(args) == 0
    for sub in ("bbpe", "bbpe16", "ube"):
        tok = corpustok.load(out / "tokenizers" / f"{sub}.json")
        assert tok.vocab_size == 600
    assert corpustok.load(out / "tokenizers" / "ube.json").substrate == "ube"
    for name in ("languages.csv", "summary.csv", "comparison.csv", "summary.md",
                 "premium_sorted.png", "premium_by_script.png", "ube_vs_bbpe.png"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "premium_sorted.png").read_bytes()[:4] == b"\x89PNG"
    with open(out / "summary.csv", encoding="utf-8") as f:
        summ = {s["tokenizer"]: s for s in csv.DictReader(f)}
    assert list(summ) == ["BBPE", "BBPE16", "UBE", "Mine"]
    assert summ["BBPE16"]["substrate"] == "utf16"
    # the file loaded through --tokenizer reports what the in-process API reports on the
    # held-out units (the ones languages.csv counts)
    with open(out / "languages.csv", encoding="utf-8") as f:
        eng_units = next(int(r["units"]) for r in csv.DictReader(f) if r["lang"] == "eng")
    units = {r["unit"] for r in sample}
    held = holdout_units(units)
    assert eng_units == len(held.evaluate) < len(units)
    local = report({"Mine": trained["BBPE"]}, sample, flds=UNIT, units=held.evaluate)
    assert float(summ["Mine"]["gini"]) == pytest.approx(local.summary[0].gini, rel=1e-5)


def test_cli_usage_errors(tmp_path):
    _, args, run = _cli([str(SAMPLE), "--out", str(tmp_path)])
    with pytest.raises(ValueError, match="--tokenizer"):
        run(args)
    _, args, run = _cli([str(SAMPLE), "--out", str(tmp_path), "--train"])
    with pytest.raises(ValueError, match="--vocab-size"):
        run(args)
    _, args, run = _cli([str(tmp_path / "nope.jsonl"), "--out", str(tmp_path), "--train",
                         "--vocab-size", "600"])
    with pytest.raises(ValueError, match="no such file"):
        run(args)
