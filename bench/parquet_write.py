"""What writing a job's token shards costs: pyarrow's writer on real shards, option by option.

    .venv/bin/python bench/parquet_write.py SHARD_FOLDER [--rounds 3]

Reads every ``*.parquet`` shard under ``SHARD_FOLDER`` (a ``corpustok tokenize`` output's
``data/``) into memory, then writes them again into memory buffers, one row group each as the
job does, with the job's options (``TOKEN_PARQUET``) and with one thing changed at a time:
the ids' list elements not nullable, no compression, PLAIN instead of BYTE_STREAM_SPLIT, zstd at
levels -1 and -5 (faster, larger) or LZ4 instead of level 1, the
tokens column alone, the ids alone as a flat int32 column (no list levels: not a format
corpustok writes, the floor of the ids' part). Variants alternate within each round; prints
each one's best CPU time, millions of ids per CPU-second and bytes per id.
"""
import argparse
import glob
import io
import os
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from corpustok.pipeline.output.shards import TOKEN_PARQUET  # noqa: E402 - after the path


def not_null_elements(table):
    i = table.schema.get_field_index("tokens")
    col = table.column("tokens").combine_chunks()
    typ = pa.list_(pa.field("element", pa.int32(), nullable=False))
    return table.set_column(i, pa.field("tokens", typ),
                            pa.ListArray.from_arrays(col.offsets, col.values, type=typ))


def flat_ids(table):
    return pa.table({"tokens": table.column("tokens").combine_chunks().values})


def without(options, *names):
    return {k: v for k, v in options.items() if k not in names}


VARIANTS = {
    "job's options": (lambda t: t, TOKEN_PARQUET),
    "elements not null": (not_null_elements, TOKEN_PARQUET),
    "no compression": (lambda t: t, {**without(TOKEN_PARQUET, "compression_level"),
                                     "compression": "none"}),
    "PLAIN ids": (lambda t: t, without(TOKEN_PARQUET, "column_encoding")),
    "zstd level -1": (lambda t: t, {**TOKEN_PARQUET, "compression_level": -1}),
    "zstd level -5": (lambda t: t, {**TOKEN_PARQUET, "compression_level": -5}),
    "lz4": (lambda t: t, {**without(TOKEN_PARQUET, "compression_level"), "compression": "lz4"}),
    "tokens column alone": (lambda t: t.select(["tokens"]),
                            {**TOKEN_PARQUET, "write_statistics": False}),
    "flat ids (no levels)": (flat_ids, {**without(TOKEN_PARQUET, "column_encoding"),
                                        "column_encoding": {"tokens": "BYTE_STREAM_SPLIT"},
                                        "write_statistics": False}),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tables = [pq.read_table(p) for p in sorted(glob.glob(os.path.join(args.folder, "*.parquet")))]
    if not tables:
        sys.exit(f"no *.parquet under {args.folder}")
    ids = sum(len(t.column("tokens").combine_chunks().values) for t in tables)
    prepared = {name: [make(t) for t in tables] for name, (make, _) in VARIANTS.items()}
    seconds = {name: [] for name in VARIANTS}
    sizes = {}
    for _ in range(args.rounds):
        for name, (_, options) in VARIANTS.items():
            c0 = time.process_time()
            size = 0
            for t in prepared[name]:
                buf = io.BytesIO()
                pq.write_table(t, buf, row_group_size=max(1, t.num_rows), **options)
                size += buf.tell()
            seconds[name].append(time.process_time() - c0)
            sizes[name] = size
    print(f"{len(tables)} shards, {ids:,} ids, pyarrow {pa.__version__}, best of {args.rounds}")
    base = min(seconds["job's options"])
    for name, runs in seconds.items():
        best = min(runs)
        print(f"{name:22s} {best:6.2f} CPU-s {ids / best / 1e6:7.1f} M ids/CPU-s "
              f"{best / base:5.2f}x the job's {sizes[name] / ids:6.3f} B/id")


if __name__ == "__main__":
    main()
