"""Report issue, item 3: ``--train`` trained on the evaluation text by default. Now, without
``--train-text``, it holds out: the aligned units are split by section (a unit with the units
nested in it, as the UDHR's ``udhr:art14`` holds ``udhr:art14:p1``) into two disjoint sets
(ordered by the SHA-256 of the section names), one set's texts (all languages) train and the
other set is evaluated; the report counts the evaluated lines the training text holds
verbatim. The output says which.

Expected values are computed here: the split by the documented rule, the tokenizers retrained
with ``BytePairTokenizer.train`` on the texts that should have trained them, token counts with
``encode``."""
import argparse
import csv
import hashlib
import json

import pytest

import corpustok
from corpustok import BytePairTokenizer
from corpustok.pipeline.jobs.demo import sample_path
from corpustok.pipeline.report.metrics import read_records


@pytest.fixture(scope="module")
def sample():
    recs = list(read_records(sample_path()))
    keep = {"eng", "fra", "deu_1996", "rus", "kor", "jpn", "cmn_hans", "hin", "arb", "spa"}
    return [r for r in recs if r["lang"] in keep]


@pytest.fixture(scope="module")
def src(tmp_path_factory, sample):
    path = tmp_path_factory.mktemp("heldout") / "par.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in sample), "utf-8")
    return path


def _run(argv):
    from corpustok.pipeline.report.job import add_report_parser, run_report
    parser = argparse.ArgumentParser(prog="corpustok")
    add_report_parser(parser.add_subparsers(dest="command"))
    return run_report(parser.parse_args(["report", *argv]))


def _split(units, fraction):
    """The documented rule: units by SHA-256 of their name, the first round(n * f) evaluated."""
    order = sorted(units, key=lambda u: hashlib.sha256(u.encode()).hexdigest())
    k = round(len(order) * fraction)
    return set(order[k:]), set(order[:k])


def _lines(texts):
    return {s for t in texts for s in (x.strip() for x in t.split("\n")) if len(s) >= 20}


def _languages(out):
    with open(out / "languages.csv", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("fraction", [None, 0.34])
def test_train_holds_out_by_default(tmp_path, sample, src, capsys, fraction):
    """The repro: ``report PARALLEL --train --vocab-size N`` with no --train-text."""
    out = tmp_path / "out"
    extra = [] if fraction is None else ["--heldout", str(fraction)]
    assert _run([str(src), "--unit-field", "unit", "--train", "--vocab-size", "520",
                 "--no-plots", "--out", str(out), *extra]) == 0
    train_units, eval_units = _split({r["unit"] for r in sample}, fraction or 0.5)
    assert train_units and eval_units and not train_units & eval_units
    train_texts = [r["text"] for r in sample if r["unit"] in train_units]
    eval_recs = [r for r in sample if r["unit"] in eval_units]
    # no evaluated text was trained on
    assert not {r["text"] for r in eval_recs} & set(train_texts)
    # the saved tokenizers are exactly those trained on the training units' texts
    for name, substrate in (("bbpe", "utf8"), ("bbpe16", "utf16"), ("ube", "ube")):
        want = BytePairTokenizer.train(train_texts, 520, substrate=substrate)
        got = corpustok.load(out / "tokenizers" / f"{name}.json")
        assert got.to_dict() == want.to_dict(), name
    # only the held-out units are evaluated
    bbpe = corpustok.load(out / "tokenizers" / "bbpe.json")
    rows = [r for r in _languages(out) if r["tokenizer"] == "BBPE"]
    assert {r["lang"] for r in rows} == {r["lang"] for r in eval_recs}
    for row in rows:
        texts = [r["text"] for r in eval_recs if r["lang"] == row["lang"]]
        assert int(row["units"]) == len(texts)
        assert int(row["tokens"]) == sum(len(bbpe.encode(t)) for t in texts)
    # and the output says so
    md = (out / "summary.md").read_text("utf-8")
    chars = sum(len(t) for t in train_texts)
    n_lines = len(_lines(r["text"] for r in eval_recs))
    # the sample's units are not nested: each is a section of its own
    said = (f"Training text: held out from the evaluation corpus, split by section (a unit "
            f"with the units nested in it): the texts of {len(train_units)} section(s) "
            f"({len(train_units)} units), all languages, trained ({chars:,} characters); the "
            f"other {len(eval_units)} section(s) ({len(eval_units)} units) are evaluated: "
            f"{', '.join(sorted(eval_units))}.")
    assert said in md and said in capsys.readouterr().out
    assert f"Overlap: 0 of {n_lines} evaluated lines" in md


def test_train_text_overlap_is_reported(tmp_path, sample, src):
    """``--train-text`` naming the evaluated text itself: every unit is evaluated and the
    output says the training text holds all of its lines."""
    txt = tmp_path / "eval.txt"
    txt.write_text("".join(r["text"] + "\n" for r in sample), "utf-8")
    out = tmp_path / "out"
    assert _run([str(src), "--unit-field", "unit", "--train", "--vocab-size", "520",
                 "--train-text", str(txt), "--no-plots", "--out", str(out)]) == 0
    n_lines = len(_lines(r["text"] for r in sample))
    md = (out / "summary.md").read_text("utf-8")
    assert "Training text: eval.txt" in md and "every unit is evaluated" in md
    assert (f"Overlap: {n_lines} of {n_lines} evaluated lines (of 20+ characters) occur "
            "verbatim in the training text (100.0%): the tokenizers saw that much of the "
            "evaluated text in training") in md
    eng = next(r for r in _languages(out) if r["lang"] == "eng")
    assert int(eng["units"]) == len({r["unit"] for r in sample if r["lang"] == "eng"}) == 3
    # a text disjoint from the evaluation: no overlap
    other = tmp_path / "other.txt"
    other.write_text("Some unrelated training text, long enough to count as a line.\n" * 50)
    out2 = tmp_path / "out2"
    assert _run([str(src), "--unit-field", "unit", "--train", "--vocab-size", "520",
                 "--train-text", str(other), "--no-plots", "--out", str(out2)]) == 0
    assert f"Overlap: 0 of {n_lines} evaluated lines" in (out2 / "summary.md").read_text()


def test_heldout_usage_errors(tmp_path, src):
    txt = tmp_path / "t.txt"
    txt.write_text("hello world\n")
    common = [str(src), "--unit-field", "unit", "--out", str(tmp_path / "o")]
    with pytest.raises(ValueError, match="--heldout .* does not apply with --train-text"):
        _run(common + ["--train", "--vocab-size", "520", "--train-text", str(txt),
                       "--heldout", "0.5"])
    with pytest.raises(ValueError, match="--heldout .* does not apply without --train"):
        _run(common + ["--tokenizer", str(txt), "--heldout", "0.5"])
    for bad in ("0", "1", "1.5"):
        with pytest.raises(ValueError, match="--heldout must be between 0 and 1"):
            _run(common + ["--train", "--vocab-size", "520", "--heldout", bad])
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps({"unit": "u1", "lang": "eng", "text": "a b"}) + "\n")
    with pytest.raises(ValueError, match="at least 2 aligned sections.*give --train-text"):
        _run([str(one), "--unit-field", "unit", "--out", str(tmp_path / "o"), "--train",
              "--vocab-size", "520"])
    assert not (tmp_path / "o").exists()


def test_nested_units_stay_on_one_side(tmp_path):
    """UDHR-like nesting: a section's text is its paragraphs' texts. Splitting by unit would
    train on a paragraph and evaluate its section; the split is by section, so no evaluated
    line is in the training text."""
    paras = {"s1": ["Alpha beta gamma delta epsilon zeta.", "Eta theta iota kappa lambda mu."],
             "s2": ["Nu xi omicron pi rho sigma tau upsilon.", "Phi chi psi omega, the end."],
             "s3": ["Lorem ipsum dolor sit amet, consectetur."],
             "s4": ["Sed do eiusmod tempor incididunt ut labore.", "Ut enim ad minim veniam."]}
    recs = []
    for lang, k in (("eng", 1), ("fra", 2)):
        for sec, ps in paras.items():
            ps = [p * k for p in ps]
            recs.append({"unit": sec, "lang": lang, "text": "\n".join(ps)})
            recs.append({"unit": f"{sec}:title", "lang": lang, "text": sec.upper()})
            recs += [{"unit": f"{sec}:p{i}", "lang": lang, "text": p} for i, p in enumerate(ps)]
    src = tmp_path / "nested.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs), "utf-8")
    out = tmp_path / "out"
    assert _run([str(src), "--unit-field", "unit", "--train", "--vocab-size", "300",
                 "--no-plots", "--out", str(out)]) == 0
    train_sections, eval_sections = _split(set(paras), 0.5)
    section = {r["unit"]: r["unit"].split(":")[0] for r in recs}
    train = [r["text"] for r in recs if section[r["unit"]] in train_sections]
    evaluated = [r for r in recs if section[r["unit"]] in eval_sections]
    assert not _lines(train) & _lines(r["text"] for r in evaluated)
    md = (out / "summary.md").read_text("utf-8")
    n_units = len({r["unit"] for r in evaluated})
    assert (f"the other {len(eval_sections)} section(s) ({n_units} units) are evaluated: "
            f"{', '.join(sorted(eval_sections))}.") in md
    assert f"Overlap: 0 of {len(_lines(r['text'] for r in evaluated))} evaluated lines" in md
    bbpe = corpustok.load(out / "tokenizers" / "bbpe.json")
    assert bbpe.to_dict() == BytePairTokenizer.train(train, 300, substrate="utf8").to_dict()
    eng = next(r for r in _languages(out) if r["tokenizer"] == "BBPE" and r["lang"] == "eng")
    assert int(eng["units"]) == n_units
