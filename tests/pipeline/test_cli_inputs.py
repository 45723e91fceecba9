"""Inputs of the tokenize and train jobs (issue 14, items 12 and 14): plain-text files (a
document per line or per paragraph) and a column mapping per input (``INPUT:id=COL,text=COL``).
"""
import gzip
import json
import lzma
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from corpustok.pipeline.cli import main
from corpustok.pipeline.files import cleanup
from corpustok.pipeline.jobs.tokenize import tokenize
from corpustok.pipeline.output.layout import JOB_FILE
from corpustok.pipeline.output.verify import verify_shards
from corpustok.pipeline.read.inputs import parse_input, resolve_inputs
from corpustok.pipeline.read.units import read_documents
from corpustok.pipeline.runtime import progress
from tests.conftest import shard_files

TEXT = b"first line\n\n   \nsecond \xff line\r\nthird line"  # blank, CRLF, invalid UTF-8


def _docs(path, **kw):
    batches = list(read_documents(str(path), **kw))
    t = pa.concat_tables([b.table for b in batches])
    return batches, t.column("row").to_pylist(), t.column("text").to_pylist(), t


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "corpustok.pipeline.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("suffix,opener", [("", open), (".gz", gzip.open), (".xz", lzma.open)])
def test_a_text_file_is_a_document_per_line(tmp_path, suffix, opener):
    path = tmp_path / f"in.txt{suffix}"
    with opener(path, "wb") as f:
        f.write(TEXT)
    batches, rows, texts, t = _docs(path)
    assert rows == [0, 3, 4]  # line numbers; blank and whitespace-only lines are no documents
    assert texts == ["first line", "second \ufffd line", "third line"]
    assert t.column("replaced").to_pylist() == [0, 1, 0]
    assert t.column("id").null_count == 3 and not any(b.has_ids for b in batches)


def test_zstd_text_and_paragraphs(tmp_path):
    import zstandard
    path = tmp_path / "in.txt.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(
        b"one a\none b\n\n\n  \ntwo\n\nthree a\r\nthree b\n"))
    _, rows, texts, _ = _docs(path, txt_docs="paragraph")
    assert rows == [0, 5, 7]  # a paragraph is numbered by its first line
    assert texts == ["one a\none b", "two", "three a\r\nthree b"]  # inner breaks kept


def test_paragraph_shards_end_at_blank_lines_and_do_not_depend_on_the_cut(tmp_path):
    path = tmp_path / "in.txt"
    paras = [" ".join(f"w{i}x{j}" for j in range(i % 7 + 1)) for i in range(200)]
    path.write_text("\n\n".join(p.replace(" ", "\n", 2) for p in paras) + "\n")
    lines = path.read_bytes().split(b"\n")
    whole = _docs(path, txt_docs="paragraph")[2]
    batches, _, texts, _ = _docs(path, txt_docs="paragraph", shard_bytes=300)
    assert len(batches) > 5 and texts == whole and len(texts) == 200
    for b in batches[:-1]:
        assert lines[b.stop - 1].strip() == b""  # a range ends just after a blank line
    assert [b.start for b in batches[1:]] == [b.stop for b in batches[:-1]]
    again = _docs(path, txt_docs="paragraph", shard_bytes=300)[0]
    assert [(b.start, b.stop) for b in again] == [(b.start, b.stop) for b in batches]


@pytest.mark.parametrize("arg,pattern,mapping", [
    ("a.jsonl:id=doc_id,text=body", "a.jsonl", {"id": "doc_id", "text": "body"}),
    ("gs://b/x.jsonl:text=body", "gs://b/x.jsonl", {"text": "body"}),
    ("gs://b/x.jsonl", "gs://b/x.jsonl", {}),
    ("s3://b/2024:01/x.parquet", "s3://b/2024:01/x.parquet", {}),  # ':' in a name: a path
    ("hdfs://[::1]:8020/x.jsonl", "hdfs://[::1]:8020/x.jsonl", {}),
    ("x.parquet:no-id,text=a:b", "x.parquet", {"id": None, "text": "a:b"}),
    ("data/*.jsonl:id=uid", "data/*.jsonl", {"id": "uid"}),
])
def test_a_mapping_is_told_from_a_url(arg, pattern, mapping):
    assert parse_input(arg) == (pattern, mapping)


def test_a_mapping_key_twice_or_two_mappings_of_one_file_are_refused(tmp_path):
    with pytest.raises(ValueError, match="given twice"):
        parse_input("a.jsonl:text=a,text=b")
    a = tmp_path / "a.jsonl"
    a.write_text("{}\n")
    with pytest.raises(ValueError, match="mapped twice"):
        resolve_inputs([f"{a}:text=x", f"{tmp_path}/*.jsonl:text=y"])
    (tmp_path / "t.txt").write_text("x\n")
    with pytest.raises(ValueError, match="text file"):
        resolve_inputs([f"{tmp_path}/t.txt:text=x"])


def _mixed(tmp_path):
    """JSONL with doc_id/body, Parquet with uid/content, a text file."""
    a = tmp_path / "a.jsonl"
    a.write_text("".join(json.dumps({"doc_id": f"a{i}", "body": f"json {i}", "title": f"t{i}"})
                         + "\n" for i in range(4)))
    b = tmp_path / "b.parquet"
    pq.write_table(pa.table({"uid": pa.array([7, 8], pa.int64()),
                             "content": ["parquet 7", "parquet 8"]}), b)
    c = tmp_path / "c.txt"
    c.write_bytes(b"text one\n\ntext two\n")
    return a, b, c


def test_a_job_mixing_jsonl_parquet_and_text_columns_runs_and_resumes(gpt2_file, tmp_path):
    a, b, c = _mixed(tmp_path)
    out = tmp_path / "out"
    args = ["tokenize", f"{a}:id=doc_id,text=body", f"{b}:id=uid,text=content", c,
            "--tokenizer", gpt2_file, "--out", out, "--workers", "1", "--no-progress"]
    p = _cli(*args)
    assert p.returncode == 0, p.stderr
    t = ds.dataset(out, format="parquet").to_table().sort_by([("source", "ascending"),
                                                              ("row", "ascending")])
    assert t.column("id").to_pylist() == ["a0", "a1", "a2", "a3", "7", "8", None, None]
    assert t.column("row").to_pylist() == [0, 1, 2, 3, 0, 1, 0, 2]
    config = json.loads((out / JOB_FILE).read_text())["config"]
    assert config["columns"] == {str(a): {"id": "doc_id", "text": "body"},
                                 str(b): {"id": "uid", "text": "content"}}
    assert config["txt_docs"] == "line"
    from corpustok import load
    assert verify_shards(str(out), load(gpt2_file)).ok
    p = _cli(*args)  # the same job: every shard kept
    assert p.returncode == 0 and "(0 written, 3 already complete)" in p.stdout, p.stderr
    p = _cli(*args, "--txt-docs", "paragraph")  # another document rule: another job
    assert p.returncode == 2 and "txt_docs: line -> paragraph" in p.stderr
    old = {e["source"]: e["shard"] for e in json.loads(
        (out / ".corpustok" / "manifest.json").read_text())["shards"]}
    args[1] = f"{a}:id=doc_id,text=title"  # another mapping: that input's shards are redone
    p = _cli(*args)
    assert p.returncode == 0 and "(1 written, 2 already complete" in p.stdout, p.stderr
    m = json.loads((out / ".corpustok" / "manifest.json").read_text())
    assert m["superseded"] == [old[str(a)]]
    assert m["config"]["columns"][str(a)] == {"id": "doc_id", "text": "title"}
    assert verify_shards(str(out), load(gpt2_file)).ok


def test_a_missing_column_says_how_to_map_it(gpt2_file, tmp_path, capsys):
    a, b, _ = _mixed(tmp_path)
    code = main(["tokenize", str(a), str(b), "--tokenizer", gpt2_file, "--out",
                 str(tmp_path / "out"), "--workers", "1", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1
    assert "INPUT:id=FIELD,text=FIELD" in out and "INPUT:text=COL" in out


def test_text_inputs_rerun_byte_identical_and_append_keeps_the_mapping(gpt2_file, tmp_path):
    a, b, _ = _mixed(tmp_path)
    c = tmp_path / "c.txt"
    c.write_text("\n\n".join(f"paragraph {i}\nof two lines" for i in range(300)) + "\n")
    kw = dict(shard_bytes=2000, txt_docs="paragraph", workers=1)
    one, two = tmp_path / "one", tmp_path / "two"
    r = tokenize([str(c), f"{a}:id=doc_id,text=body"], str(one), gpt2_file, **kw)
    assert r.ok and r.manifest["totals"]["shards"] > 3
    shards = shard_files(one)
    tokenize([str(c), f"{a}:id=doc_id,text=body"], str(two), gpt2_file, **kw)
    assert sorted(os.listdir(two)) == sorted(os.listdir(one))
    for f in shards:
        assert (one / f).read_bytes() == (two / f).read_bytes()
    os.remove(two / shards[1])  # a lost shard is redone, the same bytes
    tokenize([str(c), f"{a}:id=doc_id,text=body"], str(two), gpt2_file, **kw)
    assert (two / shards[1]).read_bytes() == (one / shards[1]).read_bytes()
    # --append: the earlier input keeps its mapping from the job record
    r = tokenize([f"{b}:id=uid,text=content"], str(one), gpt2_file, mode="append", **kw)
    assert r.ok and r.manifest["totals"]["documents"] == 300 + 4 + 2
    assert r.counters.get("shards_skipped") == len(shards)


def test_train_reads_text_files_and_text_mappings(tmp_path, capsys):
    a, b, c = _mixed(tmp_path)
    out = tmp_path / "tok.json"
    assert main(["train", str(c), f"{b}:text=content", f"{a}:text=body", "--vocab-size", "300",
                 "--out", str(out), "--workers", "1"]) == 0
    assert "on 8 documents" in capsys.readouterr().out
    assert main(["train", f"{b}:id=uid,text=content", "--vocab-size", "300",
                 "--out", str(out), "--workers", "1"]) == 2
    assert "train reads texts only" in capsys.readouterr().err


def test_the_progress_channel_is_registered_for_the_signal_cleanup(tmp_path):
    with progress.Progress(str(tmp_path), [], show=False) as prog:
        channel = os.environ[progress.ENV]
        assert os.path.exists(channel) and channel in cleanup._REGISTERED
        assert prog is not None
    assert not os.path.exists(channel) and channel not in cleanup._REGISTERED
    kept = cleanup.make("corpustok-test-")
    cleanup.remove_registered()  # what the SIGINT/SIGTERM handler calls before os._exit
    assert not os.path.exists(kept)
    cleanup.release(kept)
