"""The ``corpustok`` command line: help, exit codes, error messages, WordPiece end to end
(ids compared with HF ``tokenizers``), encode/decode."""
import argparse
import gzip
import json
import os

import pyarrow.parquet as pq
import pytest

from corpustok.pipeline.cli import main
from corpustok.pipeline.cli.args import build_parser as _parser
from corpustok.pipeline.jobs.demo import sample_path
from corpustok.pipeline.output.layout import RUN_MANIFEST
from tests.conftest import TEST_DATA, shard_files

BERT_VOCAB = str(TEST_DATA / "bert-base-uncased" / "vocab.txt")
SAMPLE = sample_path()


def _hf():
    from tokenizers import Tokenizer
    hf = Tokenizer.from_file(str(TEST_DATA / "bert-base-uncased" / "tokenizer.json"))
    hf.no_padding()
    hf.no_truncation()
    return hf


def _subparsers():
    parser = _parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


def test_help_explains_every_option(capsys):
    subs = _subparsers()
    assert set(subs) == {"train", "tokenize", "encode", "decode", "export-tokenizer", "export",
                         "main", "report", "verify", "stats"}
    for name, sub in subs.items():
        assert sub.description, name
        for action in sub._actions:
            assert action.help and len(action.help) > 10, (name, action.dest)
    with pytest.raises(SystemExit) as e:
        main(["tokenize", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--tokenizer", "--out", "--text-column", "--id-column", "--eos", "--bos",
                 "--shard-mb", "--workers", "--rejects", "FlinkRunner", "DataflowRunner",
                 "--runner dask", "--dask-address", "--export"):
        assert flag in text


def test_bad_arguments_exit_2_with_a_clear_message(tmp_path, capsys):
    assert main(["tokenize", str(tmp_path / "nothing*.parquet"), "--tokenizer", BERT_VOCAB,
                 "--out", str(tmp_path / "o")]) == 2
    assert "no input file matches" in capsys.readouterr().err
    bad = tmp_path / "tok.json"
    bad.write_text('{"format": "corpustok", "type": "unigram"}')
    assert main(["tokenize", SAMPLE, "--tokenizer", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "unknown corpustok tokenizer type 'unigram'" in capsys.readouterr().err
    bad.write_text('{"format": "corpustok", ')
    assert main(["encode", "--tokenizer", str(bad), "x"]) == 2
    assert "not a tokenizer file" in capsys.readouterr().err
    assert main(["tokenize", SAMPLE, "--tokenizer", BERT_VOCAB, "--out", str(tmp_path / "o"),
                 "--eos", "[NOPE]"]) == 2
    assert "'[NOPE]' is not a token of this tokenizer" in capsys.readouterr().err
    assert main(["tokenize", SAMPLE, "--tokenizer", BERT_VOCAB, "--out", str(tmp_path / "o"),
                 "--rejetcs"]) == 2  # a typo is not handed to Beam to be dropped
    assert "unknown option(s) --rejetcs" in capsys.readouterr().err
    for option, says in (("--shard-mb", "must be a number of MB from 1e-06 to 1e+06, got 0"),
                         ("--shard-rows", "must be a number above 0, got 0"),
                         ("--workers", "must be a number above 0, got 0")):
        with pytest.raises(SystemExit) as exit_:
            main(["tokenize", SAMPLE, "--tokenizer", BERT_VOCAB, "--out", str(tmp_path / "o"),
                  option, "0"])
        assert exit_.value.code == 2
        assert says in capsys.readouterr().err


def test_tokenize_wordpiece_end_to_end_matches_hf(tmp_path, capsys):
    hf = _hf()
    with open(SAMPLE, encoding="utf-8") as f:
        records = [json.loads(line) for line in f][:400]
    inp = tmp_path / "docs.jsonl.gz"
    with gzip.open(inp, "wt", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps({"key": r["id"], "body": r["text"]}) + "\n")
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"not parquet")
    out = tmp_path / "out"
    code = main(["tokenize", str(inp), str(corrupt), "--tokenizer", BERT_VOCAB, "--out", str(out),
                 "--id-column", "key", "--text-column", "body", "--eos", "[SEP]",
                 "--bos", "[CLS]", "--shard-mb", "0.05", "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 1  # the corrupt file is reported, the rest completes
    assert f"ERROR {corrupt}" in printed and "documents  400" in printed
    rows = {}
    for name in shard_files(out):
        for r in pq.read_table(out / name).to_pylist():
            rows[r["row"]] = r
    assert sorted(rows) == list(range(400))
    want = hf.encode_batch([r["text"] for r in records])  # adds [CLS] ... [SEP]
    for i, enc in enumerate(want):
        assert rows[i]["tokens"] == enc.ids, records[i]["id"]
        assert rows[i]["id"] == records[i]["id"]


def test_encode_decode(tmp_path, capsys):
    assert main(["encode", "--tokenizer", BERT_VOCAB, "Hello, world!", "naïve café"]) == 0
    hf = _hf()
    lines = capsys.readouterr().out.splitlines()
    assert lines == [" ".join(map(str, hf.encode(t, add_special_tokens=False).ids))
                     for t in ("Hello, world!", "naïve café")]
    assert main(["decode", "--tokenizer", BERT_VOCAB] + lines[0].split()) == 0
    assert capsys.readouterr().out.strip() == hf.decode(list(map(int, lines[0].split())))


def test_train_with_beam_counting_equals_in_memory_training(tmp_path, capsys):
    from corpustok import BytePairTokenizer
    import corpustok
    with open(SAMPLE, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f]
    half = len(texts) // 2  # two inputs of different formats
    a = tmp_path / "a.jsonl.gz"
    with gzip.open(a, "wt", encoding="utf-8") as f:
        for i, t in enumerate(texts[:half]):
            f.write(json.dumps({"id": i, "text": t}) + "\n")
    import pyarrow as pa
    b = tmp_path / "b.parquet"
    pq.write_table(pa.table({"id": list(range(half, len(texts))), "text": texts[half:]}), b,
                   row_group_size=200)
    out = tmp_path / "ube.json"
    assert main(["train", str(a), str(b), "--substrate", "ube", "--vocab-size", "800",
                 "--out", str(out)]) == 0
    assert f"on {len(texts):,} documents" in capsys.readouterr().out
    got = corpustok.load(out)
    want = BytePairTokenizer.train(texts, 800, substrate="ube")
    assert got.vocab == want.vocab and got.merges == want.merges
    # encode/decode through the CLI round-trip a multilingual text
    text = texts[-1]
    assert main(["encode", "--tokenizer", str(out), text]) == 0
    ids = capsys.readouterr().out.split()
    assert [int(i) for i in ids] == want.encode(text)
    assert main(["decode", "--tokenizer", str(out)] + ids) == 0
    assert capsys.readouterr().out == text + "\n"


def test_train_special_tokens_then_tokenize_with_eos(tmp_path, capsys):
    # The README's pair of commands: a special token reserved at training is an --eos later.
    from corpustok import BytePairTokenizer
    import corpustok
    with open(SAMPLE, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f][:200]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))
    out = tmp_path / "tok.json"
    assert main(["train", str(src), "--vocab-size", "700", "--special-token", "<|endoftext|>",
                 "--out", str(out)]) == 0
    want = BytePairTokenizer.train(texts, 700, special_tokens=["<|endoftext|>"])
    got = corpustok.load(out)
    assert got.vocab == want.vocab and got.merges == want.merges
    assert got.token_to_id("<|endoftext|>") == 0
    capsys.readouterr()
    assert main(["tokenize", str(src), "--tokenizer", str(out), "--out", str(tmp_path / "s"),
                 "--eos", "<|endoftext|>", "--no-progress"]) == 0
    assert "documents  200" in capsys.readouterr().out
    # Fewer ids than asked: said, with the reason.
    assert main(["train", str(src), "--vocab-size", "100", "--out", str(tmp_path / "t.json")]) == 0
    assert "asked for 100 ids: the base symbols and special tokens alone take 512" in \
        capsys.readouterr().out


def test_train_refuses_what_cannot_give_a_tokenizer(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": 1, "text": "some text"}) + "\n")
    out = tmp_path / "tok.json"
    assert main(["train", str(src), "--vocab-size", "600", "--text-column", "body",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no document with text could be read" in err and "fields seen: id, text" in err
    assert not out.exists()
    assert main(["train", str(src), "--vocab-size", "600", "--out",
                 str(tmp_path / "missing" / "tok.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_report_with_fields_that_align_nothing_is_an_error(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["report", SAMPLE, "--tokenizer", f"B={BERT_VOCAB}", "--out", str(out),
                 "--no-plots"]) == 2
    assert "needs --unit-field unit" in capsys.readouterr().err and not out.exists()
    assert main(["report", SAMPLE, "--tokenizer", f"B={BERT_VOCAB}", "--out", str(out),
                 "--no-plots", "--unit-field", "unit"]) == 0


def test_a_failing_job_exits_3_with_its_traceback(tmp_path, capsys, monkeypatch):
    from corpustok.pipeline.jobs import tokenize as run

    def broken(*args, **kwargs):
        raise RuntimeError("a Beam worker died")
    monkeypatch.setattr(run, "tokenize", broken)
    assert main(["tokenize", SAMPLE, "--tokenizer", BERT_VOCAB, "--out",
                 str(tmp_path / "o")]) == 3
    err = capsys.readouterr().err
    assert "RuntimeError: a Beam worker died" in err and "failed (traceback above)" in err


def test_main_job_trains_tokenizes_and_verifies(tmp_path, capsys):
    assert main(["main", "--out", str(tmp_path / "out"), "--vocab-size", "600"]) == 0
    printed = capsys.readouterr().out
    assert "corpustok: COMPLETED" in printed
    assert "decode back to their input text" in printed
    with open(tmp_path / "out" / "shards" / RUN_MANIFEST, encoding="utf-8") as f:
        manifest = json.load(f)
    with open(SAMPLE, encoding="utf-8") as f:
        assert manifest["totals"]["documents"] == sum(1 for _ in f)
