"""Schema checks give clear errors naming the input, the column and a hint."""
import pyarrow as pa
import pytest

from corpustok.schemas import (DOCUMENTS, TOKENS, check_document_columns, check_run_manifest,
                               check_shard_entry, check_table)


def _entry(**kw):
    e = {"shard": "a-0-1", "file": "a-0-1.parquet", "source": "a.parquet", "rows": [0, 10],
         "documents": 8, "tokens": 100, "bytes": 400, "replaced": 0,
         "rejects": {"null_text": 2}, "rejected": [], "input_sha256": "x",
         "parquet_bytes": 10, "sha256": "w", "name": "a.parquet", "tokenizer_sha256": "y",
         "config": "z"}
    e.update(kw)
    return e


def test_document_columns_missing_and_wrong_type():
    schema = pa.schema([("id", pa.int64()), ("body", pa.string()), ("n", pa.float64())])
    check_document_columns(schema, "id", "body", "f.parquet")
    with pytest.raises(ValueError, match=r"f\.parquet: missing text column 'text' \(columns: "
                                         r"id, body, n\); choose another with --text-column"):
        check_document_columns(schema, "id", "text", "f.parquet")
    with pytest.raises(ValueError, match="missing id column 'doc'.*--id-column"):
        check_document_columns(schema, "doc", "body", "f.parquet")
    with pytest.raises(TypeError, match="text column 'n' has type double, expected one of "
                                        "string, large_string, binary, large_binary"):
        check_document_columns(schema, "id", "n", "f.parquet")
    with pytest.raises(TypeError, match="id column 'n' has type double"):
        check_document_columns(schema, "n", "body", "f.parquet")


def test_check_table():
    t = pa.table({"id": pa.array(["a"], pa.large_string()), "text": pa.array([b"x"]),
                  "row": pa.array([0], pa.int64()), "replaced": pa.array([0], pa.int64())})
    check_table(t, DOCUMENTS)  # binary text is accepted
    with pytest.raises(ValueError, match=r"columns \['id', 'text'\], expected"):
        check_table(t.select(["id", "text"]), DOCUMENTS)
    with pytest.raises(TypeError, match="column 'row' has type int32"):
        check_table(t.set_column(2, "row", pa.array([0], pa.int32())), DOCUMENTS)
    toks = pa.table([pa.array(["a"], pa.large_string()),
                     pa.array([[1, 2]], pa.large_list(pa.int32()))] +
                    [pa.array(["a.parquet"] if n == "source" else [0], TOKENS.field(n).type)
                     for n in TOKENS.names[2:]],
                    names=TOKENS.names)
    check_table(toks, TOKENS)  # large_list stands in for list past 2**31 ids
    check_table(toks.set_column(0, "id", pa.array([7], pa.int64())), TOKENS)  # integer ids
    with pytest.raises(TypeError, match="column 'id' has type double"):
        check_table(toks.set_column(0, "id", pa.array([7.0])), TOKENS)


def test_shard_entry_and_run_manifest():
    check_shard_entry(_entry())
    with pytest.raises(ValueError, match=r"missing keys \['tokens'\]"):
        check_shard_entry({k: v for k, v in _entry().items() if k != "tokens"})
    with pytest.raises(ValueError, match="exceed the 10 rows"):
        check_shard_entry(_entry(documents=9))
    with pytest.raises(ValueError, match="unknown reject reasons"):
        check_shard_entry(_entry(rejects={"oops": 1}, documents=1))
    manifest = {"format": "corpustok-shards", "version": 2, "status": "COMPLETED",
                "tokenizer_sha256": "y", "config": {}, "errors": [],
                "totals": {"documents": 8, "tokens": 100, "bytes": 400},
                "shards": [_entry()]}
    check_run_manifest(manifest)
    manifest["totals"]["tokens"] = 99
    with pytest.raises(ValueError, match=r"totals.tokens = 99 but the shards sum to 100"):
        check_run_manifest(manifest)
