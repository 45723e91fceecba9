"""Token shard files as ``shards.write_tokens`` writes them, read back by three independent
Parquet readers (pyarrow, DuckDB, polars), with the layout ``TOKEN_PARQUET`` promises: one row
group, ids BYTE_STREAM_SPLIT and zstd, no dictionary, statistics on every column but the ids;
written atomically and byte-identical for the same rows."""
import os

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpustok.pipeline.output import shards
from corpustok.pipeline.output.shards import write_tokens
from corpustok.schemas import TOKENS, check_table

COLUMNS = TOKENS.names


def token_table(docs, ids=None, large=False):
    """A TOKENS table of ``docs`` (lists of ids) with ids ``ids`` (default "0", "1", ...)."""
    n = len(docs)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum([len(d) for d in docs], out=offsets[1:])
    values = pa.array(np.concatenate([np.asarray(d, np.int32) for d in docs] or
                                     [np.zeros(0, np.int32)]), pa.int32())
    lists = (pa.LargeListArray.from_arrays(pa.array(offsets), values) if large else
             pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values))
    schema = TOKENS if not large else TOKENS.set(1, pa.field("tokens", lists.type,
                                                             nullable=False))
    ids = [str(i) for i in range(n)] if ids is None else ids
    return pa.Table.from_arrays([
        pa.array(ids, pa.large_string()), lists,
        pa.array([len(d) for d in docs], pa.int64()),
        pa.array([3 * len(d) + 1 for d in docs], pa.int64()),
        pa.array([i % 3 for i in range(n)], pa.int64()),
        pa.array(["in/part-0.parquet"] * n, pa.string()),
        pa.array(np.arange(10, 10 + n), pa.int64())], schema=schema)


def rows(table):
    return list(zip(*(table.column(c).to_pylist() for c in COLUMNS)))


def written(tmp_path, table, name="shard.parquet"):
    path = str(tmp_path / name)
    write_tokens(path, table, run_id="test")
    return path


def assert_reads_back(path, table):
    """pyarrow gives back the very table (schema included); DuckDB and polars its values."""
    got = pq.read_table(path)
    assert got.schema.equals(table.schema) and got.equals(table)
    check_table(got, TOKENS, path)
    want = rows(table)
    con = duckdb.connect()
    assert [tuple(r) for r in con.execute(
        f"select {', '.join(COLUMNS)} from read_parquet(?) order by row", [path]).fetchall()] \
        == want
    df = pl.read_parquet(path)
    assert df.columns == COLUMNS
    assert list(zip(*(df[c].to_list() for c in COLUMNS))) == want


def test_pyarrow_duckdb_polars_read_shards_back(tmp_path):
    rng = np.random.default_rng(2)
    docs = [rng.integers(0, 50257, rng.integers(0, 300)).tolist() for _ in range(400)]
    docs[7] = []
    ids = [None if i % 5 == 0 else f"d{i} ü-ß 文" for i in range(400)]
    assert_reads_back(written(tmp_path, token_table(docs, ids)), token_table(docs, ids))
    # several data pages (~4 MB of ids), ids past 2**16 and 2**31 - 1, a large_list column,
    # only empty lists, --no-id shards, no rows at all
    many = [rng.integers(0, 100_000, 1000).tolist() for _ in range(1000)]
    for i, t in enumerate((token_table(many), token_table([[0, 70000], [], [2**31 - 1]]),
                           token_table([[1, 2], [], [3]], large=True),
                           token_table([[], [], []]), token_table([[1], [2]], ids=[None, None]),
                           token_table([]))):
        assert_reads_back(written(tmp_path, t, f"t{i}.parquet"), t)
    assert pq.ParquetFile(tmp_path / "t0.parquet").metadata.row_group(0).column(1) \
        .total_uncompressed_size > 3 << 20


def test_layout(tmp_path):
    t = token_table([[5, 1, 70000], [], [3]], ids=["b", None, "a"])
    meta = pq.ParquetFile(written(tmp_path, t)).metadata
    assert meta.num_row_groups == 1 and meta.num_rows == 3
    assert meta.created_by.startswith("parquet-cpp-arrow")
    group = meta.row_group(0)
    for i in range(group.num_columns):
        col = group.column(i)
        assert col.compression == "ZSTD" and not col.has_dictionary_page, col.path_in_schema
        stats = col.statistics
        if col.path_in_schema == "tokens.list.element":
            assert col.physical_type == "INT32"
            assert "BYTE_STREAM_SPLIT" in col.encodings
            assert stats is None or not stats.has_min_max  # nobody filters on token ids
            continue
        assert "BYTE_STREAM_SPLIT" not in col.encodings
        assert stats.has_min_max, col.path_in_schema
        want = [x for x in t.column(col.path_in_schema).to_pylist() if x is not None]
        assert (stats.min, stats.max, stats.null_count) == (min(want), max(want),
                                                              3 - len(want))


def test_same_rows_same_bytes(tmp_path):
    t = token_table([[1, 2, 3], [], [4, 5], [6]])
    chunked = pa.Table.from_batches(t.to_batches(max_chunksize=3))  # chunks of 3 and 1 rows
    sliced = pa.concat_tables([t, t]).combine_chunks().slice(4)  # arrays at offset 4
    assert chunked.column("tokens").num_chunks == 2 and chunked.equals(t) and sliced.equals(t)
    data = {open(written(tmp_path, x, f"{i}.parquet"), "rb").read()
            for i, x in enumerate((t, t, chunked, sliced))}
    assert len(data) == 1


def test_written_atomically(tmp_path, monkeypatch):
    path = written(tmp_path, token_table([[1, 2]]))
    before = open(path, "rb").read()

    def fails(table, f, **kw):
        f.write(b"PAR1 half a file")
        raise OSError("disk full")
    monkeypatch.setattr(shards.pq, "write_table", fails)
    with pytest.raises(OSError, match="disk full"):
        write_tokens(path, token_table([[3, 4, 5]]), run_id="test")
    assert open(path, "rb").read() == before  # the old shard, whole
    assert os.listdir(tmp_path) == ["shard.parquet"]  # no temporary left


def test_only_token_tables(tmp_path):
    t = token_table([[1, 2], [3]])
    wide = t.set_column(1, pa.field("tokens", pa.list_(pa.int64()), nullable=False),
                        t.column("tokens").cast(pa.list_(pa.int64())))
    with pytest.raises(TypeError, match="tokens"):
        write_tokens(str(tmp_path / "x.parquet"), wide)
    with pytest.raises(ValueError, match="columns"):
        write_tokens(str(tmp_path / "x.parquet"), t.drop_columns(["row"]))
    assert not os.listdir(tmp_path)


@st.composite
def token_docs(draw):
    """Rows of ids from a vocabulary of 4, 300, 70,001 or 2**31 ids."""
    top = draw(st.sampled_from([3, 300, 70000, 2**31 - 1]))
    return draw(st.lists(st.lists(st.integers(0, top), max_size=40), max_size=40))


@settings(max_examples=60, deadline=None)
@given(token_docs())
def test_any_rows_read_back(tmp_path_factory, docs):
    t = token_table(docs)
    path = written(tmp_path_factory.mktemp("h"), t)
    got = pq.read_table(path)
    assert got.schema.equals(t.schema) and rows(got) == rows(t)
