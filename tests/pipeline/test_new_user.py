"""What a new user meets before the first shard (the exact repros of the issue): a trained
tokenizer file is never replaced unasked; bad numbers are one-line errors; the Python API
takes what the command line takes; an ordinary token as --eos is refused; a file of another
format than its name says is not a job done (and is not exported); folders and standard input
are inputs; `corpustok stats` reads a folder's manifest; the first run says when it compiles
the kernels and keeps that out of the throughput."""
import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from corpustok.pipeline.cli import main
from corpustok.pipeline.jobs import tokenize as run
from tests.conftest import TEST_DATA

GPT2 = str(TEST_DATA / "gpt2")


def _jsonl(path, n=20, first=0):
    with open(path, "w", encoding="utf-8") as f:
        for i in range(first, first + n):
            f.write(json.dumps({"id": i, "text": f"document number {i}, some words"}) + "\n")
    return str(path)


def test_train_never_replaces_a_file_unasked(tmp_path, capsys):
    src = _jsonl(tmp_path / "in.jsonl")
    out = tmp_path / "tok.json"
    out.write_text("a 32,000-id tokenizer that shard folders name by its sha256")
    before = out.read_bytes()
    assert main(["train", src, "--vocab-size", "600", "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err and out.read_bytes() == before
    assert main(["train", src, "--vocab-size", "600", "--out", str(out), "--overwrite"]) == 0
    assert json.loads(out.read_text())["format"] == "corpustok"


@pytest.mark.parametrize("value", ["inf", "nan", "1e-9", "-1", "0"])
def test_a_bad_shard_size_is_one_line_exit_2(tmp_path, value):
    src = _jsonl(tmp_path / "in.jsonl")
    p = subprocess.run([sys.executable, "-m", "corpustok.pipeline.cli", "tokenize", src,
                        "--tokenizer", GPT2, "--out", str(tmp_path / "o"), "--shard-mb", value],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert f"--shard-mb: must be a number of MB from 1e-06 to 1e+06, got {value}" in p.stderr


def test_the_python_api_takes_what_the_command_line_takes(tmp_path, gpt2_file):
    import corpustok
    src = _jsonl(tmp_path / "in.jsonl")
    folder = run.tokenize(src, tmp_path / "a", GPT2)  # one path (not its characters), a folder
    assert folder.ok and folder.manifest["totals"]["documents"] == 20
    obj = run.tokenize([src], str(tmp_path / "b"), corpustok.load(gpt2_file))  # an object
    assert obj.manifest["totals"]["tokens"] == folder.manifest["totals"]["tokens"]
    with pytest.raises(TypeError, match="tokenizer: a tokenizer file or folder"):
        run.tokenize(src, tmp_path / "c", 42)


def test_an_ordinary_token_as_eos_is_refused(tmp_path, capsys):
    src = _jsonl(tmp_path / "in.jsonl")
    out = str(tmp_path / "o")
    assert main(["tokenize", src, "--tokenizer", GPT2, "--out", out, "--eos", "the"]) == 2
    err = capsys.readouterr().err
    assert "'the' is an ordinary token of the vocabulary (id 1169), not a special token" in err
    assert main(["tokenize", src, "--tokenizer", GPT2, "--out", out, "--eos", "1169"]) == 0


def test_a_json_array_named_jsonl_is_not_a_job_done(tmp_path, capsys):
    """A JSON array saved as .jsonl (pretty-printed or on one line) fails its file in one line
    that says so, instead of rejecting every line."""
    out = str(tmp_path / "o")
    for k, text in enumerate(['[{"id": 1, "text": "a"},\n{"id": 2, "text": "b"}]\n',
                              '[\n  {\n    "id": 1,\n    "text": "a"\n  }\n]\n',
                              '[{"id": 1, "text": "a"}, {"id": 2, "text": "b"}]\n']):
        src = tmp_path / f"array{k}.jsonl"
        src.write_text(text)
        assert main(["tokenize", str(src), "--tokenizer", GPT2, "--out", out,
                     "--overwrite"]) == 1
        printed = capsys.readouterr()
        assert "corpustok: COMPLETED_WITH_ERRORS" in printed.out
        assert "is one JSON array (its first line starts with '['), not JSON Lines" in \
            printed.out + printed.err
        assert "rejects    none" in printed.out
        assert main(["export", out, "--format", "numpy", "--out", str(tmp_path / "x")]) == 2
        assert "status COMPLETED_WITH_ERRORS" in capsys.readouterr().err
    # a line that is an array of numbers is a record of the wrong kind, as before
    src = tmp_path / "numbers.jsonl"
    src.write_text('[1, 2]\n{"id": 1, "text": "a"}\n')
    assert main(["tokenize", str(src), "--tokenizer", GPT2, "--out", out, "--overwrite",
                 "--max-reject-fraction", "0.6"]) == 0
    assert "bad_record: 1" in capsys.readouterr().out


def test_csv_named_jsonl_is_not_a_job_done(tmp_path, capsys):
    src = tmp_path / "table.jsonl"
    src.write_text("id,text\n1,a\n2,b\n")
    out = str(tmp_path / "o")
    assert main(["tokenize", str(src), "--tokenizer", GPT2, "--out", out]) == 1
    printed = capsys.readouterr()
    assert "corpustok: COMPLETED_WITH_TOO_MANY_REJECTS" in printed.out
    assert "100.0% of the rows read were rejected" in printed.err
    assert main(["export", out, "--format", "numpy", "--out", str(tmp_path / "x")]) == 2
    assert "status COMPLETED_WITH_TOO_MANY_REJECTS: export a COMPLETED run only" in \
        capsys.readouterr().err
    assert main(["tokenize", str(src), "--tokenizer", GPT2, "--out", out,
                 "--max-reject-fraction", "1"]) == 0  # the rejects accepted, as asked


def test_a_folder_is_an_input(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / ".cache").mkdir()
    _jsonl(corpus / "a.jsonl", 5)
    _jsonl(corpus / "sub" / "b.jsonl", 7, 100)
    _jsonl(corpus / ".cache" / "hidden.jsonl", 9, 200)  # hidden: not read
    (corpus / "dataset_info.json").write_text("{}")  # .json in a folder: metadata, not read
    (corpus / "README.md").write_text("about the data")
    out = tmp_path / "o"
    assert main(["tokenize", str(corpus), "--tokenizer", GPT2, "--out", str(out)]) == 0
    t = pq.read_table(out)
    assert sorted(t.column("id").to_pylist()) == list(range(5)) + list(range(100, 107))
    assert main(["tokenize", str(corpus), "--tokenizer", GPT2, "--out",
                 str(corpus / "shards")]) == 2  # an output inside the folder read
    assert "inside the folder the input" in capsys.readouterr().err


def test_standard_input_is_an_input_and_a_rerun_resumes(tmp_path):
    data = "".join(json.dumps({"id": i, "text": f"piped {i}"}) + "\n" for i in range(30))
    out = str(tmp_path / "o")
    command = [sys.executable, "-m", "corpustok.pipeline.cli", "tokenize", "-", "--tokenizer",
               GPT2, "--out", out, "--no-progress"]
    for written in ("1 written", "0 written"):
        p = subprocess.run(command, input=data, capture_output=True, text=True, timeout=180)
        assert p.returncode == 0 and written in p.stdout, p.stderr
    t = pq.read_table(out)
    assert t.column("id").to_pylist() == list(range(30))
    assert set(t.column("source").to_pylist()) == {"<stdin>"}
    text = subprocess.run([sys.executable, "-m", "corpustok.pipeline.cli", "tokenize", "-",
                           "--stdin-format", "txt", "--tokenizer", GPT2, "--out",
                           str(tmp_path / "t"), "--no-progress"], input="one\n\ntwo\n",
                          capture_output=True, text=True, timeout=180)
    assert text.returncode == 0 and "documents  2" in text.stdout, text.stderr


def test_stats_reads_the_manifest(tmp_path, capsys):
    a, b = _jsonl(tmp_path / "a.jsonl", 5), _jsonl(tmp_path / "b.jsonl", 8, 100)
    out = str(tmp_path / "o")
    assert main(["tokenize", a, b, "--tokenizer", GPT2, "--out", out]) == 0
    rows = pq.read_table(out).to_pylist()
    capsys.readouterr()
    assert main(["stats", out]) == 0
    text = capsys.readouterr().out
    tokens = sum(r["n_tokens"] for r in rows)
    assert f"documents  13 in 2 shards from 2 input(s)" in text
    assert f"tokens     {tokens:,} " in text and "tokenizer  gpt2 (50,257 ids" in text
    for name, ids in ((a, range(5)), (b, range(100, 108))):
        n = sum(r["n_tokens"] for r in rows if r["source"] == name)
        assert any(line.split()[:4] == [name, "1", str(len(ids)), f"{n:,}"]
                   for line in text.splitlines()), text


def test_the_first_run_says_it_compiles_and_keeps_it_out_of_the_throughput(
        tmp_path, monkeypatch, capsys):
    """A warm-up slower than the notice's threshold is a compilation: it is said as it
    starts and when it ends, and the summary puts its time apart from the work's."""
    from corpustok.pipeline import encode as tk
    monkeypatch.setattr(run, "COMPILE_NOTICE_AFTER", 0.0)
    monkeypatch.setattr(tk, "COMPILE_NOTICE_AFTER", 0.0)
    src = _jsonl(tmp_path / "in.jsonl", 50)
    assert main(["tokenize", src, "--tokenizer", GPT2, "--out", str(tmp_path / "o")]) == 0
    printed = capsys.readouterr()
    assert "compiling the kernels for this tokenizer (the first run of its family" in \
        printed.err
    assert "s (cached for later runs)" in printed.err
    assert "s compiling the kernels (first run only)" in printed.out


def test_a_name_that_is_not_utf8_and_its_escaped_spelling_are_two_inputs(tmp_path, capsys):
    """``x<0xff>.jsonl`` and a file literally named ``x\\xff.jsonl`` once showed alike, and
    the rerun of their job was refused."""
    (tmp_path / "in").mkdir()
    raw = os.path.join(os.fsencode(str(tmp_path / "in")), b"x\xff.jsonl")
    with open(raw, "w") as f:
        f.write(json.dumps({"id": 1, "text": "not UTF-8 in its name"}) + "\n")
    _jsonl(tmp_path / "in" / "x\\xff.jsonl", 3, 10)
    out = str(tmp_path / "o")
    command = ["tokenize", str(tmp_path / "in"), "--tokenizer", GPT2, "--out", out]
    assert main(command) == 0
    sources = set(pq.read_table(out).column("source").to_pylist())
    base = str(tmp_path / "in")
    assert sources == {f"{base}/x\\xff.jsonl", f"{base}/x\\\\xff.jsonl"}
    capsys.readouterr()
    assert main(command) == 0  # the rerun resumes: the two are known apart
    assert "0 written, 2 already complete" in capsys.readouterr().out
