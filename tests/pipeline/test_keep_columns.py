"""Columns carried through (`--keep-column`): a column or nested field of the inputs lands in
the shards beside the tokens, with the type it was declared with (pandas categoricals as their
values), nulls where an input lacks it (and for text inputs); a value the type cannot hold
fails its file in one line; the readers see the columns; keeping columns is another job."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpustok.pipeline.cli import main
from tests.conftest import TEST_DATA

GPT2 = str(TEST_DATA / "gpt2")
KEEP = ["--keep-column", "lang", "--keep-column", "quality:float64", "--keep-column",
        "meta.url", "--keep-column", "meta.n:int64", "--keep-column", "flag:bool"]


@pytest.fixture()
def inputs(tmp_path):
    records = [{"id": i, "text": f"document {i}", "lang": ["en", "fr"][i % 2],
                "quality": [0.5, 1, 2.25, None][i % 4], "meta": {"url": f"u{i}", "n": i},
                "flag": i % 3 == 0} for i in range(8)]
    records[5].pop("lang")  # a field missing in one record: null
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    parquet = tmp_path / "b.parquet"
    pq.write_table(pa.table({
        "id": [100, 101], "text": ["parquet one", "parquet two"],
        "lang": pa.array(["de", "es"]).dictionary_encode(),  # a pandas categorical
        "quality": pa.array([3, 4], pa.int32()),
        "meta": [{"url": "p0", "n": 7}, {"url": "p1", "n": 8}]}), parquet)  # no "flag"
    text = tmp_path / "c.txt"
    text.write_text("a line of text\n")
    expected = {r["id"]: (r.get("lang"), None if r["quality"] is None else float(r["quality"]),
                          r["meta"]["url"], r["meta"]["n"], r["flag"]) for r in records}
    expected.update({100: ("de", 3.0, "p0", 7, None), 101: ("es", 4.0, "p1", 8, None),
                     None: (None, None, None, None, None)})
    return [str(jsonl), str(parquet), str(text)], expected


def test_kept_columns_land_in_the_shards_with_their_types(inputs, tmp_path):
    paths, expected = inputs
    out = tmp_path / "o"
    assert main(["tokenize", *paths, "--tokenizer", GPT2, "--out", str(out), *KEEP]) == 0
    t = pq.read_table(out)
    assert t.schema.names[-5:] == ["lang", "quality", "meta.url", "meta.n", "flag"]
    assert [t.schema.field(n).type for n in t.schema.names[-5:]] == \
        [pa.large_string(), pa.float64(), pa.large_string(), pa.int64(), pa.bool_()]
    got = {r["id"]: (r["lang"], r["quality"], r["meta.url"], r["meta.n"], r["flag"])
           for r in t.to_pylist()}
    assert got == expected
    datasets = pytest.importorskip("datasets")
    d = datasets.load_dataset("parquet", data_dir=str(out), split="train")
    assert sorted(d.column_names) == sorted(t.schema.names)
    assert main(["verify", str(out)]) == 0


def test_a_string_column_keeps_json_values_as_written(tmp_path):
    src = tmp_path / "a.jsonl"
    values = ['"x"', "1e2", "7.0", "12", "true", '{"a": [1, 2]}', "null"]
    src.write_text("".join(f'{{"id": {i}, "text": "t", "v": {v}}}\n'
                           for i, v in enumerate(values)))
    out = tmp_path / "o"
    assert main(["tokenize", str(src), "--tokenizer", GPT2, "--out", str(out),
                 "--keep-column", "v"]) == 0
    got = pq.read_table(out).sort_by("id").column("v").to_pylist()
    assert got == ["x", "1e2", "7.0", "12", "true", '{"a":[1,2]}', None]


def test_a_value_the_type_cannot_hold_fails_its_file_in_one_line(tmp_path, capsys):
    src = tmp_path / "a.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": "t", "n": [1, 2, 2.5][i]}) + "\n"
                           for i in range(3)))
    out = tmp_path / "o"
    assert main(["tokenize", str(src), "--tokenizer", GPT2, "--out", str(out),
                 "--keep-column", "n:int64"]) == 1
    printed = capsys.readouterr().out
    assert "line 2: field 'n' is 2.5 (a float), not a int64 of --keep-column n:int64" in printed


def test_a_kept_column_named_as_a_shard_column_is_refused(tmp_path, capsys):
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps({"id": 1, "text": "t", "tokens": 3}) + "\n")
    assert main(["tokenize", str(src), "--tokenizer", GPT2, "--out", str(tmp_path / "o"),
                 "--keep-column", "tokens"]) == 2
    assert "the shards have a column of that name" in capsys.readouterr().err


def test_keeping_columns_is_another_job(inputs, tmp_path, capsys):
    paths, _ = inputs
    out = str(tmp_path / "o")
    assert main(["tokenize", *paths, "--tokenizer", GPT2, "--out", out]) == 0
    assert main(["tokenize", *paths, "--tokenizer", GPT2, "--out", out, *KEEP]) == 2
    assert "keep_columns" in capsys.readouterr().err
    assert main(["tokenize", *paths, "--tokenizer", GPT2, "--out", out, *KEEP,
                 "--overwrite"]) == 0
    assert "meta.n" in pq.read_table(out).schema.names
