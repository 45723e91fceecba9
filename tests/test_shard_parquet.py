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
from corpustok.pipeline.shard_parquet import thrift, token_parquet_parts
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
        if name == "tokens":  # null count only: nobody filters on token ids
            assert sa.null_count == 0 and not sa.has_min_max
            continue
        assert sa.null_count == sb.null_count, name
        assert sa.has_min_max == sb.has_min_max, name
        if sa.has_min_max:
            assert (sa.min, sa.max) == (sb.min, sb.max), name
    return a


def uses_dictionary(f):
    col = f.metadata.row_group(0).column(1)
    assert col.compression == "ZSTD"
    assert col.has_dictionary_page == ("RLE_DICTIONARY" in col.encodings)
    return col.has_dictionary_page


def test_shard_equals_pyarrow_file():
    rng = np.random.default_rng(1)
    docs = [rng.integers(0, 5000, rng.integers(0, 300)) for _ in range(500)]
    docs[3] = []
    assert uses_dictionary(assert_same_as_pyarrow(token_table(docs)))
    # the same ids under a GPT-2-sized vocabulary: too few ids to pay for the dictionary
    docs[0] = [50256]
    assert not uses_dictionary(assert_same_as_pyarrow(token_table(docs)))


def test_wide_ids_are_plain_and_bounds():
    # ids past 2**16 cannot be 16-bit indices; 65535 still can
    assert not uses_dictionary(assert_same_as_pyarrow(token_table([[0, 70000, 5], [1 << 30], []])))
    top = np.arange(4 << 16) % (1 << 16)
    assert uses_dictionary(assert_same_as_pyarrow(token_table([top[::-1], [], [7]])))


def test_null_and_odd_ids_and_all_empty():
    assert_same_as_pyarrow(token_table([[1], [2, 3], [4]], ids=[None, "ü-ß 文", None]))
    assert_same_as_pyarrow(token_table([[1], [2]], ids=[None, None]))  # --no-id shards
    assert_same_as_pyarrow(token_table([[], [], []]))  # only empty lists: no values at all
    assert_same_as_pyarrow(token_table([[5]], ids=["x" * 5000]))  # min/max too long: left out


def test_large_list_tokens():
    assert_same_as_pyarrow(token_table([[1, 2], [], [3]], large=True))


@st.composite
def token_docs(draw):
    """Rows of ids from a vocabulary of 4, 300 or 70,001 ids (so both id encodings occur)."""
    top = draw(st.sampled_from([3, 300, 70000]))
    return draw(st.lists(st.lists(st.integers(0, top), max_size=40), min_size=1, max_size=40))


@settings(max_examples=80, deadline=None)
@given(token_docs(), st.integers(1, 50))
def test_pages_cut_at_row_ends(docs, page_values):
    """Any row lengths and page size, either encoding: the pages together hold every row
    once, whole (pages of empty rows only included)."""
    old = shard_parquet.PAGE_VALUES
    shard_parquet.PAGE_VALUES = page_values
    try:
        table = token_table(docs)
        f = ours(table)
        assert f.read().column("tokens").to_pylist() == docs
        assert f.read().equals(theirs(table).read())
    finally:
        shard_parquet.PAGE_VALUES = old


def test_only_the_tokens_layout():
    # the page layouts follow from TOKENS' nullability: another schema is refused, never
    # written with levels that do not match it
    t = token_table([[1, 2], [], [3]])
    for i, nullable in ((1, True), (6, True), (0, False)):
        f = t.schema.field(i)
        other = t.cast(t.schema.set(i, pa.field(f.name, f.type, nullable=nullable)))
        with pytest.raises(ValueError, match="TOKENS schema only"):
            token_parquet_parts(other)
    wide = t.set_column(1, pa.field("tokens", pa.list_(pa.int64()), nullable=False),
                        t.column("tokens").cast(pa.list_(pa.int64())))
    with pytest.raises(ValueError, match="TOKENS schema only"):
        token_parquet_parts(wide)


def test_sliced_and_chunked_tables():
    values = pa.array([9, None, 1, 2, 3, 4], pa.int32())  # a null outside the slice below
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 4, 6], pa.int32()), values).slice(1, 2)
    t = token_table([[1, 2], [3, 4]]).set_column(1, TOKENS.field("tokens"), lists)
    assert ours(t).read().column("tokens").to_pylist() == [[1, 2], [3, 4]]
    both = pa.concat_tables([token_table([[1], []]), token_table([[5, 6]]).slice(0, 1)])
    assert_same_as_pyarrow(both)
    assert_same_as_pyarrow(token_table([[1], [2], [3], [4]]).slice(1, 2))


def test_long_string_statistics_dropped_one_at_a_time():
    stats = dict(((f, v) for f, _, v in shard_parquet._stats(0, b"a", b"z" * 5000)))
    assert stats[6] == b"a" and stats[5] is None  # min kept, max too long


def test_bad_token_tables():
    t = token_table([[1, -2]])
    with pytest.raises(ValueError, match="never negative"):
        token_parquet_parts(t)
    nulls = pa.ListArray.from_arrays(pa.array([0, 1, 1], pa.int32()), pa.array([1], pa.int32()),
                                     mask=pa.array([False, True]))
    t = token_table([[1], []]).set_column(1, TOKENS.field("tokens"), nulls)  # Arrow allows it
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
    docs = [rng.integers(0, 1000, rng.integers(0, 50)).tolist() for _ in range(200)]
    docs[7] = []
    wide = [[0, 70000], [], [65536]]
    for name, table in (("narrow", token_table(docs, ids=[None if i % 5 == 0 else f"d{i}"
                                                           for i in range(200)])),
                        ("wide", token_table(wide))):
        path = tmp_path / f"{name}.parquet"
        path.write_bytes(b"".join(token_parquet_parts(table)))
        assert uses_dictionary(pq.ParquetFile(path)) == (name == "narrow")
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
