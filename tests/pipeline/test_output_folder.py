"""The output folder as its readers see it: pyarrow and Hugging Face ``datasets`` open the
folder itself, polars and DuckDB its ``data/`` folder, and find the token rows alone
(metadata, rejects and a killed run's temporaries are skipped); ids keep their input's type;
``source`` is the input as given; folders of earlier layouts are refused, or redone with
``--overwrite`` (the user's own files in them refused first, untouched)."""
import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpustok.pipeline.config import config_hash
from corpustok.pipeline.jobs.tokenize import tokenize
from corpustok.pipeline.output.layout import (DATA_DIR, ENTRIES_DIR, JOB_FILE, META_DIR,
                                              REJECTS_DIR, RUN_MANIFEST, TMP_DIR, OtherJob)



def _inputs(folder, n=40):
    """A Parquet file with int32 ``uid`` ids (one null text: a reject) and a JSONL file with
    JSON integer ids; ids 0..n-1 and 100..109, texts naming them."""
    os.makedirs(folder, exist_ok=True)
    texts = [f"document {i}: some words to tokenize" for i in range(n)]
    texts[3] = None
    a = os.path.join(folder, "a.parquet")
    pq.write_table(pa.table({"uid": pa.array(range(n), pa.int32()), "text": texts}), a,
                   row_group_size=n // 2)
    b = os.path.join(folder, "b.jsonl")
    with open(b, "w") as f:
        f.writelines(json.dumps({"uid": 100 + i, "text": f"json line {i}"}) + "\n"
                     for i in range(10))
    return a, b


@pytest.fixture(scope="module")
def run(gpt2_file, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("folder")
    a, b = _inputs(str(tmp / "in"))
    out = str(tmp / "out")
    r = tokenize([a, b], out, gpt2_file, id_column="uid", shard_bytes=300, write_rejects=True)
    assert r.ok and r.manifest["totals"]["shards"] > 2
    assert os.listdir(os.path.join(out, REJECTS_DIR))
    # What a reader listing the folder mid-run, or after a killed run, also finds.
    for folder in (os.path.join(out, TMP_DIR), os.path.join(out, ENTRIES_DIR),
                   os.path.join(out, REJECTS_DIR)):
        with open(os.path.join(folder, ".tmp-corpustok-0123456789ab-x.parquet.1234abcd"),
                  "wb") as f:
            f.write(b"PAR1 half a file")
    return out, r, sorted(list(range(40)) + list(range(100, 110)))


def _ids(column):
    return sorted(v for v in column if v is not None)


def test_pyarrow_reads_the_folder(run):
    import pyarrow.dataset as ds
    out, r, ids = run
    for t in (pq.read_table(out), ds.dataset(out, format="parquet").to_table()):
        assert t.schema.field("id").type == pa.int64()
        assert _ids(t.column("id").to_pylist()) == [i for i in ids if i != 3]
        assert t.num_rows == r.manifest["totals"]["documents"]


def test_polars_and_duckdb_read_the_shards(run):
    import duckdb
    import polars as pl
    out, r, ids = run
    for df in (pl.read_parquet(f"{out}/data/*.parquet"), pl.read_parquet(f"{out}/data")):
        assert df.schema["id"] == pl.Int64 and \
            _ids(df["id"].to_list()) == [i for i in ids if i != 3]
    got = duckdb.sql(f"SELECT id FROM read_parquet('{out}/data/*.parquet') ORDER BY id")
    got = got.fetchall()
    assert [i for (i,) in got] == [i for i in ids if i != 3]  # sorted as numbers


def test_globs_across_folders_see_the_shards_alone(gpt2_file, tmp_path):
    """``**/*.parquet`` (DuckDB, polars): without --rejects the folder holds no other
    Parquet file, at any depth."""
    import duckdb
    import polars as pl
    a, _ = _inputs(str(tmp_path / "in"))
    out = str(tmp_path / "out")
    r = tokenize([a], out, gpt2_file, id_column="uid", shard_bytes=300)
    n = r.manifest["totals"]["documents"]
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}/**/*.parquet')").fetchall() \
        == [(n,)]
    assert pl.read_parquet(f"{out}/**/*.parquet").height == n


def test_datasets_load_dataset_data_dir(run, tmp_path):
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    out, r, ids = run
    d = datasets.load_dataset("parquet", data_dir=out, split="train",
                              cache_dir=str(tmp_path / "hf"))
    assert d.num_rows == r.manifest["totals"]["documents"]
    assert d.features["id"].dtype == "int64"


def test_ids_keep_their_type_and_source_is_as_given(gpt2_file, tmp_path, monkeypatch):
    a, b = _inputs(str(tmp_path / "in"))
    names = tmp_path / "names.jsonl"
    names.write_text("".join(json.dumps({"uid": f"n{i}", "text": f"named {i}"}) + "\n"
                             for i in range(3)))
    monkeypatch.chdir(tmp_path)
    # Typed relative and unnormalized: the rows name it as typed, normalized; the records
    # keep its absolute name.
    r = tokenize(["in/../in/b.jsonl"], "out", gpt2_file, id_column="uid")
    assert r.manifest["config"]["id_type"] == "int64"
    t = pq.read_table("out")
    assert set(t.column("source").to_pylist()) == {"in/b.jsonl"}
    assert {e["source"] for e in r.manifest["shards"]} == {b}
    assert t.column("id").to_pylist() == list(range(100, 110))
    again = tokenize([b], "out", gpt2_file, id_column="uid")  # the absolute name: the same job
    assert again.counters.get("shards_skipped") == 1
    assert set(pq.read_table("out").column("source").to_pylist()) == {"in/b.jsonl"}
    # A job that mixes integer and string ids writes strings (integers as decimal text).
    assert tokenize([a, str(names)], "mixed", gpt2_file, id_column="uid").ok
    ids = pq.read_table("mixed").column("id")
    assert ids.type == pa.large_string() and {"0", "39", "n2"} <= set(ids.to_pylist())
    # Appending string ids to a job of integer ids would mix the folder: refused.
    with pytest.raises(OtherJob, match="id_type: int64 -> string"):
        tokenize([str(names)], "out", gpt2_file, id_column="uid", mode="append")


def test_jsonl_ids_that_are_not_integers_in_an_integer_job(gpt2_file, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"uid": u, "text": "t"}) + "\n"
                           for u in (1, "2", 2.5, True, 2 ** 63, -2 ** 63)))
    r = tokenize([str(src)], str(tmp_path / "out"), gpt2_file, id_column="uid")
    [err] = r.manifest["errors"]  # the file fails at its first such id, named, no rejects
    assert err["source"] == str(src) and 'line 1: id "2"' in err["error"]
    assert r.manifest["totals"]["rejects"] == {} and r.manifest["totals"]["shards"] == 0
    src.write_text("".join(json.dumps({"uid": u, "text": "t"}) + "\n"
                           for u in (1, 7.0, 1e2, -2 ** 63)))
    r = tokenize([str(src)], str(tmp_path / "out"), gpt2_file, id_column="uid")
    assert r.ok
    assert pq.read_table(str(tmp_path / "out")).column("id").to_pylist() == [1, 7, 100, -2 ** 63]
    big = tmp_path / "big.parquet"  # uint64 past int64's range: that file fails, named
    pq.write_table(pa.table({"uid": pa.array([1, 2 ** 64 - 1], pa.uint64()), "text": ["a", "b"]}),
                   big)
    r = tokenize([str(big)], str(tmp_path / "out2"), gpt2_file, id_column="uid")
    [err] = r.manifest["errors"]
    assert err["source"] == str(big) and "ArrowInvalid" in err["error"]


def _to_old_layout(out):
    """Rewrite a folder as the older corpustok wrote it: shards, manifests and rejects beside
    each other, entries named ``<shard>.manifest.json``."""
    def old_entry(e):
        return {**e, "file": os.path.basename(e["file"])}

    for f in os.listdir(os.path.join(out, DATA_DIR)):
        os.rename(os.path.join(out, DATA_DIR, f), os.path.join(out, f))
    for f in os.listdir(os.path.join(out, ENTRIES_DIR)):
        with open(os.path.join(out, ENTRIES_DIR, f)) as src:
            entry = old_entry(json.load(src))
        with open(os.path.join(out, f.replace(".json", ".manifest.json")), "w") as dst:
            json.dump(entry, dst)
    with open(os.path.join(out, RUN_MANIFEST)) as f:
        manifest = json.load(f)
    manifest["shards"] = [old_entry(e) for e in manifest["shards"]]
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    os.rename(os.path.join(out, JOB_FILE), os.path.join(out, "_job.json"))
    shutil.rmtree(os.path.join(out, META_DIR))
    os.rmdir(os.path.join(out, DATA_DIR))


def _to_previous_layout(out):
    """Rewrite a folder as the previous layout had it: the shards beside ``.corpustok/``,
    entries naming them there, a configuration without ``layout``."""
    for f in os.listdir(os.path.join(out, DATA_DIR)):
        os.rename(os.path.join(out, DATA_DIR, f), os.path.join(out, f))
    os.rmdir(os.path.join(out, DATA_DIR))
    for path in [os.path.join(out, ENTRIES_DIR, f) for f in os.listdir(
            os.path.join(out, ENTRIES_DIR))] + [os.path.join(out, RUN_MANIFEST)]:
        with open(path) as f:
            doc = json.load(f)
        for e in doc.get("shards", [doc] if "shard" in doc else []):
            e["file"] = os.path.basename(e["file"])
        if isinstance(doc.get("config"), dict):
            doc["config"].pop("layout", None)
        with open(path, "w") as f:
            json.dump(doc, f)
    with open(os.path.join(out, JOB_FILE)) as f:
        job = json.load(f)
    for key in ("layout", "vocab_size", "tokenizer_name", "sources"):  # what it lacked
        del job["config"][key]
    job["config_id"] = config_hash(job["config"])
    with open(os.path.join(out, JOB_FILE), "w") as f:
        json.dump(job, f)


@pytest.mark.parametrize("layout", ["older", "previous"])
def test_a_folder_of_an_earlier_layout_is_refused_or_overwritten(gpt2_file, tmp_path, layout):
    a, _ = _inputs(str(tmp_path / "in"))
    out = str(tmp_path / "out")
    first = tokenize([a], out, gpt2_file, id_column="uid", shard_bytes=300)
    {"older": _to_old_layout, "previous": _to_previous_layout}[layout](out)
    mine = [os.path.join(out, n) for n in ("notes.txt", "part-0000000000-00000000-0000000000-"
                                           "0000000001.parquet")]
    for path in mine:
        with open(path, "w") as f:
            f.write("the user's")
    before = sorted(os.listdir(out))
    for mode in (None, "overwrite"):  # the user's files first: refused, nothing touched
        with pytest.raises(OtherJob, match="did not write"):
            tokenize([a], out, gpt2_file, id_column="uid", shard_bytes=300, mode=mode)
        assert sorted(os.listdir(out)) == before
    for path in mine:
        os.remove(path)
    before = sorted(os.listdir(out))
    with pytest.raises(OtherJob, match="(older|earlier) corpustok.*--overwrite"):
        tokenize([a], out, gpt2_file, id_column="uid", shard_bytes=300)
    assert sorted(os.listdir(out)) == before
    removed = []
    r = tokenize([a], out, gpt2_file, id_column="uid", shard_bytes=300, mode="overwrite",
                 on_remove=removed.append)
    n = first.manifest["totals"]["shards"]
    assert len(removed) == 2 * n + 2 and sorted(r.removed) == sorted(removed)
    assert r.ok and r.counters.get("shards_written") == n
    assert sorted(os.listdir(out)) == [META_DIR, DATA_DIR]
    assert sorted(f"{DATA_DIR}/{f}" for f in os.listdir(os.path.join(out, DATA_DIR))) == \
        sorted(e["file"] for e in r.manifest["shards"])
    if layout == "older":  # one without shards (a job record alone): cleared without asking
        other = tmp_path / "empty"
        other.mkdir()
        (other / "_job.json").write_text(json.dumps({"format": "corpustok-job", "inputs": []}))
        assert tokenize([a], str(other), gpt2_file, id_column="uid").ok
        assert not (other / "_job.json").exists()
