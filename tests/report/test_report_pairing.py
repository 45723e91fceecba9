"""Report issue, item 2: "UBE vs BBPE" compared UBE with whatever utf8 tokenizer came first
(cl100k, headlined -45.6% Gini). Now the comparison pairs only the BBPE and UBE that
``--train`` trained on one text at one size, or the two tokenizers ``--pair`` names (checked:
a utf8 and a ube BPE of one size); otherwise there is no comparison, and a note says why.

GPT-2's vocabulary (``tests/data/gpt2``, a utf8 BPE of 50,257 ids trained on other text)
stands in for cl100k. Expected numbers are computed here with the tokenizers' own ``encode``."""
import argparse
import csv
import json
import re

import pytest

import corpustok
from corpustok import BytePairTokenizer
from tests.conftest import GPT2, TEST_DATA
from corpustok.pipeline.jobs.demo import sample_path
from corpustok.pipeline.report.metrics import holdout_units, read_records
from tests.report.conftest import gini_double_sum



@pytest.fixture(scope="module")
def sample():
    recs = list(read_records(sample_path()))
    keep = {"eng", "fra", "rus", "kor", "jpn", "cmn_hans", "hin", "amh", "iii", "ell_monotonic"}
    return [r for r in recs if r["lang"] in keep]


@pytest.fixture(scope="module")
def files(tmp_path_factory, sample):
    """The sample as JSONL and a UBE/BBPE pair trained on its texts at 700 ids."""
    d = tmp_path_factory.mktemp("pairing")
    src = d / "par.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in sample), "utf-8")
    texts = [r["text"] for r in sample]
    BytePairTokenizer.train(texts, 700, substrate="ube").save(d / "ube.json")
    BytePairTokenizer.train(texts, 700, substrate="utf8").save(d / "bbpe.json")
    return d, src


def _run(argv):
    from corpustok.pipeline.report.job import add_report_parser, run_report
    parser = argparse.ArgumentParser(prog="corpustok")
    add_report_parser(parser.add_subparsers(dest="command"))
    return run_report(parser.parse_args(["report", *argv]))


def _tokens(tok, records):
    """Tokens per language, by the tokenizer's own encode."""
    out = {}
    for r in records:
        out[r["lang"]] = out.get(r["lang"], 0) + len(tok.encode(r["text"]))
    return out



def test_cl100k_first_is_not_compared_with_ube(files, capsys):
    """The repro: ``--tokenizer cl100k=... --tokenizer UBE=ube.json``. The utf8 tokenizer
    given first is not a BBPE trained with this UBE: no comparison, no headline."""
    d, src = files
    out = d / "repro"
    assert _run([str(src), "--unit-field", "unit", "--tokenizer", f"cl100k={GPT2}",
                 "--tokenizer", f"UBE={d / 'ube.json'}", "--out", str(out)]) == 0
    assert not (out / "comparison.csv").exists()
    assert not (out / "ube_vs_bbpe.png").exists()
    md = (out / "summary.md").read_text("utf-8")
    assert "## UBE vs" not in md and "Gini 0." not in md and "->" not in md
    assert "no UBE-vs-BBPE comparison" in md and "--pair BBPE,UBE" in md
    assert "no UBE-vs-BBPE comparison" in capsys.readouterr().out


def test_train_compares_its_own_bbpe_and_ube(files, sample):
    """With --train and cl100k given too, the comparison is the trained BBPE against the
    trained UBE (same text, same size), and says so; its numbers are those of the saved
    tokenizers on the evaluated units."""
    d, src = files
    out = d / "train"
    assert _run([str(src), "--unit-field", "unit", "--train", "--vocab-size", "600",
                 "--heldout", "0.34", "--tokenizer", f"cl100k={GPT2}", "--no-plots",
                 "--out", str(out)]) == 0
    bbpe = corpustok.load(out / "tokenizers" / "bbpe.json")
    ube = corpustok.load(out / "tokenizers" / "ube.json")
    assert (bbpe.substrate, ube.substrate, bbpe.vocab_size, ube.vocab_size) == (
        "utf8", "ube", 600, 600)
    held = holdout_units({r["unit"] for r in sample}, 0.34)
    evaluated = [r for r in sample if r["unit"] in held.evaluate]
    tb, tu = _tokens(bbpe, evaluated), _tokens(ube, evaluated)
    with open(out / "comparison.csv", encoding="utf-8") as f:
        rows = {r["lang"]: r for r in csv.DictReader(f)}
    assert set(rows) == set(tb)
    assert list(next(iter(rows.values())))[4:6] == ["tokens_BBPE", "tokens_UBE"]
    for lang, r in rows.items():
        assert (int(r["tokens_BBPE"]), int(r["tokens_UBE"])) == (tb[lang], tu[lang])
        assert float(r["change_pct"]) == pytest.approx(100 * (tu[lang] / tb[lang] - 1),
                                                       rel=1e-5)
    md = (out / "summary.md").read_text("utf-8")
    assert "## UBE vs BBPE" in md and "cl100k" not in md.split("## UBE vs BBPE")[1]
    assert "UBE and BBPE were trained by this report on the same text" in md
    # the headline Gini change, from premiums computed here (every unit of these languages
    # is shared with English)
    gini = {name: gini_double_sum([t[lang] / t["eng"] for lang in t if lang != "eng"])
            for name, t in (("BBPE", tb), ("UBE", tu))}
    m = re.search(r"- Gini (\S+) -> (\S+) \(([+-]\d+\.\d)%\)", md)
    assert (float(m[1]), float(m[2])) == (pytest.approx(gini["BBPE"], abs=6e-5),
                                          pytest.approx(gini["UBE"], abs=6e-5))
    assert m[3] == f"{100 * (gini['UBE'] / gini['BBPE'] - 1):+.1f}"


def test_pair_names_a_bbpe_and_a_ube_of_one_size(files, sample):
    d, src = files
    base = [str(src), "--unit-field", "unit", "--no-plots", "--tokenizer", f"cl100k={GPT2}",
            "--tokenizer", f"UBE={d / 'ube.json'}", "--tokenizer", f"BBPE={d / 'bbpe.json'}",
            "--tokenizer", f"bert={TEST_DATA / 'bert-base-uncased' / 'vocab.txt'}"]
    with pytest.raises(ValueError, match=r"vocabulary sizes differ \(50257 vs 700\)"):
        _run(base + ["--pair", "cl100k,UBE", "--out", str(d / "bad1")])
    with pytest.raises(ValueError, match="'UBE' has substrate ube, expected utf8"):
        _run(base + ["--pair", "UBE,BBPE", "--out", str(d / "bad2")])
    with pytest.raises(ValueError, match=r"'bert' has substrate none \(WordPiece\)"):
        _run(base + ["--pair", "bert,UBE", "--out", str(d / "bad3")])
    with pytest.raises(ValueError, match="no tokenizer named 'nope'"):
        _run(base + ["--pair", "nope,UBE", "--out", str(d / "bad4")])
    with pytest.raises(ValueError, match="expected two tokenizer names"):
        _run(base + ["--pair", "BBPE", "--out", str(d / "bad5")])
    for bad in ("bad1", "bad2", "bad3", "bad4", "bad5"):
        assert not (d / bad).exists()
    out = d / "user"
    assert _run(base + ["--pair", "BBPE,UBE", "--out", str(out)]) == 0
    md = (out / "summary.md").read_text("utf-8")
    assert "UBE and BBPE were paired by the user (--pair)" in md
    assert "cannot check that they were trained on the same text" in md
    tb = _tokens(corpustok.load(d / "bbpe.json"), sample)
    with open(out / "comparison.csv", encoding="utf-8") as f:
        rows = {r["lang"]: r for r in csv.DictReader(f)}
    assert {lang: int(r["tokens_BBPE"]) for lang, r in rows.items()} == tb


def test_train_refuses_a_pair_of_different_sizes(files, capsys):
    """A training text too small for the size leaves BBPE short of it (UBE's larger alphabet
    reaches it): the sizes differ, so no comparison is made, and the note says why."""
    d, src = files
    out = d / "small"
    assert _run([str(src), "--unit-field", "unit", "--train", "--vocab-size", "600",
                 "--no-plots", "--out", str(out)]) == 0
    sizes = {n: corpustok.load(out / "tokenizers" / f"{n}.json").vocab_size
             for n in ("bbpe", "ube")}
    assert sizes["bbpe"] < sizes["ube"] == 600
    assert not (out / "comparison.csv").exists()
    md = (out / "summary.md").read_text("utf-8")
    assert "## UBE vs" not in md
    assert (f"no UBE-vs-BBPE comparison: UBE vs BBPE: vocabulary sizes differ "
            f"({sizes['bbpe']} vs 600)") in md
