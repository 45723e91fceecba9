"""The direct Parquet writer of token shards, checked against two independent readers:
pyarrow (its Parquet schema, Arrow schema, values and statistics must equal those of the file
``pyarrow.parquet.write_table`` makes of the same table) and DuckDB (its own Parquet reader)."""
import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpustok.pipeline import shard_parquet
from corpustok.pipeline.shard_parquet import token_parquet_parts, thrift
from corpustok.schemas import TOKENS


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


def ours(table):
    return pq.ParquetFile(io.BytesIO(b"".join(token_parquet_parts(table))))


def theirs(table):
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    buf.seek(0)
    return pq.ParquetFile(buf)


def assert_same_as_pyarrow(table):
    a, b = ours(table), theirs(table)
    assert a.schema.equals(b.schema), (a.schema, b.schema)
    assert a.schema_arrow.equals(b.schema_arrow)
    assert a.metadata.num_rows == table.num_rows and a.metadata.num_row_groups == 1
    got = a.read()
    assert got.equals(b.read())
    assert got.column("tokens").to_pylist() == table.column("tokens").to_pylist()
    for i, name in enumerate(table.schema.names):
        sa = a.metadata.row_group(0).column(i).statistics
        sb = b.metadata.row_group(0).column(i).statistics
        if name == "tokens":
            assert sa is None  # no min/max for the ids: nobody filters on them
            continue
        assert sa.null_count == sb.null_count, name
        assert sa.has_min_max == sb.has_min_max, name
        if sa.has_min_max:
            assert (sa.min, sa.max) == (sb.min, sb.max), name
    return a


def test_shard_equals_pyarrow_file():
    rng = np.random.default_rng(1)
    docs = [rng.integers(0, 50257, rng.integers(0, 300)) for _ in range(500)]
    docs[3] = []
    f = assert_same_as_pyarrow(token_table(docs))
    col = f.metadata.row_group(0).column(1)
    assert col.compression == "ZSTD" and "RLE_DICTIONARY" in col.encodings
    assert col.has_dictionary_page


def test_wide_ids_are_plain_and_bounds():
    # ids past 2**16 cannot be 16-bit indices; 65535 still can
    f = assert_same_as_pyarrow(token_table([[0, 70000, 5], [1 << 30], []]))
    col = f.metadata.row_group(0).column(1)
    assert not col.has_dictionary_page and "RLE_DICTIONARY" not in col.encodings
    f = assert_same_as_pyarrow(token_table([[65535, 0], [7]]))
    assert f.metadata.row_group(0).column(1).has_dictionary_page


def test_null_and_odd_ids_and_all_empty():
    assert_same_as_pyarrow(token_table([[1], [2, 3], [4]], ids=[None, "ü-ß 文", None]))
    assert_same_as_pyarrow(token_table([[1], [2]], ids=[None, None]))  # --no-id shards
    assert_same_as_pyarrow(token_table([[], [], []]))  # only empty lists: no values at all
    assert_same_as_pyarrow(token_table([[5]], ids=["x" * 5000]))  # min/max too long: left out


def test_large_list_tokens():
    assert_same_as_pyarrow(token_table([[1, 2], [], [3]], large=True))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 70000), max_size=40), min_size=1, max_size=40),
       st.integers(1, 50))
def test_pages_cut_at_row_ends(docs, page_values):
    """Any row lengths and page size: the pages together hold every row once, whole."""
    old = shard_parquet.PAGE_VALUES
    shard_parquet.PAGE_VALUES = page_values
    try:
        table = token_table(docs)
        f = ours(table)
        assert f.read().column("tokens").to_pylist() == docs
        assert f.read().equals(theirs(table).read())
    finally:
        shard_parquet.PAGE_VALUES = old


def test_bad_token_tables():
    t = token_table([[1, -2]])
    with pytest.raises(ValueError, match="never negative"):
        token_parquet_parts(t)
    nulls = pa.ListArray.from_arrays(pa.array([0, 1, 1], pa.int32()), pa.array([1], pa.int32()),
                                     mask=pa.array([False, True]))
    t = token_table([[1], []]).set_column(1, pa.field("tokens", nulls.type), nulls)
    with pytest.raises(ValueError, match="never null"):
        token_parquet_parts(t)


def test_thrift_compact_encoding():
    # field deltas, zigzag varints, long field jumps, lists of structs, booleans
    assert thrift([(1, 5, 1), (2, 5, -1)]) == bytes([0x15, 0x02, 0x15, 0x01, 0x00])
    assert thrift([(1, 8, "ab")]) == bytes([0x18, 0x02]) + b"ab" + b"\x00"
    assert thrift([(20, 6, 300)]) == bytes([0x06, 0x28, 0xD8, 0x04, 0x00])
    assert thrift([(3, 1, True), (4, 1, None)]) == bytes([0x31, 0x00])
    assert thrift([(1, 9, (5, list(range(15))))])[:3] == bytes([0x19, 0xF5, 15])


def test_duckdb_reads_shards(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    rng = np.random.default_rng(2)
    docs = [rng.integers(0, 30000, rng.integers(0, 50)).tolist() for _ in range(200)]
    docs[7] = []
    wide = [[0, 70000], [], [65536]]
    for name, table in (("narrow", token_table(docs, ids=[None if i % 5 == 0 else f"d{i}"
                                                           for i in range(200)])),
                        ("wide", token_table(wide))):
        path = tmp_path / f"{name}.parquet"
        path.write_bytes(b"".join(token_parquet_parts(table)))
        rows = con.execute(f"select id, tokens, n_tokens, n_bytes, replaced, source, row "
                          f"from read_parquet('{path}') order by row").fetchall()
        want = list(zip(*(table.column(c).to_pylist() for c in table.schema.names)))
        assert [tuple(r) for r in rows] == want
        # DuckDB sees the statistics its row-group pruning uses (old and new fields)
        stats = con.execute(f"select path_in_schema, stats_min, stats_max, stats_min_value, "
                            f"stats_max_value, stats_null_count from parquet_metadata('{path}')"
                            ).fetchall()
        rows = table.column("row").to_pylist()
        lo, hi = str(min(rows)), str(max(rows))
        assert ("row", lo, hi, lo, hi, 0) in stats
        nulls = table.column("id").null_count
        assert [s[5] for s in stats if s[0] == "id"] == [nulls]
