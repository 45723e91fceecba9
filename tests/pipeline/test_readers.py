"""The output folder as the real readers open it, with inputs named to trip them: Hugging
Face ``datasets`` (folder, ``data_files`` glob, the folder as a dataset), pyarrow (folder,
dataset, ``data/``), polars (``data/`` folder and glob) and DuckDB each read every kept
document exactly once, whatever the inputs are called (a leading ``_``, parentheses and a
space, ``test``/``train``/``dev``/``valid`` in the name, a name that is not UTF-8), with
rejects and a killed run's temporaries in the folder. These are the README's recipes.

(Spark reads a folder as pyarrow does, skipping names that start with ``.`` or ``_``; it is
not installed here.)
"""
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpustok.pipeline.jobs.tokenize import tokenize
from corpustok.pipeline.output.layout import DATA_DIR, TMP_DIR

# Each name trips a reader when a shard inherits it: "_" and "(copy) " hide a file from
# pyarrow's discovery, "test"/"train"/"dev"/"valid" make `datasets` infer splits.
NAMES = ["_x.jsonl", "(copy) y.jsonl", "unit_test.jsonl", "train-0.jsonl", "dev.parquet",
         os.fsdecode(b"\xff\xfe-valid.jsonl")]


def _write(path, first_id, n):
    texts = [f"document {first_id + i} of {os.fsencode(path)[-20:]!r}" for i in range(n)]
    texts[1] = None  # a reject in every input
    if path.endswith(".parquet"):
        pq.write_table(pa.table({"id": list(range(first_id, first_id + n)), "text": texts}),
                       path, row_group_size=4)
        return
    with open(path, "w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"id": first_id + i, "text": t}) + "\n")


@pytest.fixture(scope="module")
def folder(gpt2_file, tmp_path_factory):
    """A folder tokenized from the inputs above, given by relative paths from their folder,
    several shards each, rejects written, and the temporaries a killed run leaves."""
    tmp = tmp_path_factory.mktemp("readers")
    os.mkdir(tmp / "in")
    ids = []
    for k, name in enumerate(NAMES):
        n = 9 + k
        _write(os.path.join(str(tmp), "in", name), 100 * k, n)
        ids += [100 * k + i for i in range(n) if i != 1]
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        r = tokenize([os.path.join("in", name) for name in NAMES], "out", gpt2_file,
                     shard_bytes=150, write_rejects=True, workers=1)
    finally:
        os.chdir(cwd)
    out = tmp / "out"
    assert r.ok and r.manifest["totals"]["shards"] > 2 * len(NAMES)
    assert r.manifest["totals"]["documents"] == len(ids)
    with open(out / TMP_DIR / ".tmp-corpustok-0123456789ab-part-x.parquet.1234abcd", "wb") as f:
        f.write(b"PAR1 half a shard")  # what a killed run leaves, until the next run
    return out, sorted(ids)


def _ids(values):
    return sorted(int(v) for v in values)


def test_shard_names_carry_no_word_of_the_inputs(folder):
    out, _ = folder
    shards = os.listdir(out / DATA_DIR)
    assert shards and all(n.startswith("part-") and n.endswith(".parquet") for n in shards)
    for word in ("test", "train", "dev", "valid", "_x", "copy"):
        assert not any(word in n for n in shards)


def test_datasets_reads_every_row_as_one_train_split(folder):
    datasets = pytest.importorskip("datasets")
    out, ids = folder
    d = datasets.load_dataset("parquet", data_dir=str(out), split="train")
    assert _ids(d["id"]) == ids
    whole = datasets.load_dataset("parquet", data_dir=str(out))
    assert list(whole) == ["train"] and whole["train"].num_rows == len(ids)
    globbed = datasets.load_dataset("parquet", data_files=f"{out}/data/*.parquet",
                                    split="train")
    assert _ids(globbed["id"]) == ids
    assert _ids(datasets.load_dataset(str(out), split="train")["id"]) == ids


def test_pyarrow_reads_every_row(folder):
    import pyarrow.dataset as ds
    out, ids = folder
    for t in (pq.read_table(out), ds.dataset(out, format="parquet").to_table(),
              pq.read_table(out / DATA_DIR)):
        assert t.schema.field("id").type == pa.int64()
        assert _ids(t.column("id").to_pylist()) == ids


def test_polars_reads_the_data_folder_and_its_glob(folder):
    pl = pytest.importorskip("polars")
    out, ids = folder
    for df in (pl.read_parquet(out / DATA_DIR), pl.read_parquet(f"{out}/data/*.parquet"),
               pl.scan_parquet(f"{out}/data/").collect()):
        assert df.schema["id"] == pl.Int64 and _ids(df["id"].to_list()) == ids


def test_duckdb_reads_the_data_glob(folder):
    duckdb = pytest.importorskip("duckdb")
    out, ids = folder
    got = duckdb.sql(f"SELECT id FROM read_parquet('{out}/data/*.parquet') ORDER BY id")
    assert [i for (i,) in got.fetchall()] == ids


def test_source_is_the_input_as_given(folder):
    out, _ = folder
    sources = set(pq.read_table(out, columns=["source"]).column("source").to_pylist())
    shown = {os.path.join("in", n).encode("utf-8", "surrogateescape")
             .decode("utf-8", "backslashreplace") for n in NAMES}
    assert sources == shown  # relative, as typed: no absolute path of this machine
