"""Kernel batches of a Parquet file's ``text`` column, one row group at a time, for the
benchmarks that time the kernel on its own. Apart from ``_common`` because it loads pyarrow
and corpustok, which the peers' processes of ``bench/corpus.py`` (they import ``_common``)
must not pay for."""
import pyarrow.parquet as pq

from corpustok.arrow import utf8_batch


def row_group_texts(path, limit=None):
    """The ``text`` column of each row group of Parquet file ``path`` (the first ``limit``)
    as a kernel batch (``corpustok.arrow.Utf8Batch``), read one at a time."""
    pf = pq.ParquetFile(path)
    groups = pf.num_row_groups if limit is None else min(limit, pf.num_row_groups)
    for i in range(groups):
        yield utf8_batch(pf.read_row_group(i, columns=["text"]).column(0))
