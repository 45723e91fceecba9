"""Kernel batches of a Parquet file's ``text`` column (one row group at a time, or its first
MB as one batch), and a new chunk cache, for the
benchmarks that time the kernel on its own. Apart from ``_common`` because it loads pyarrow
and corpustok, which the peers' processes of ``bench/corpus.py`` (they import ``_common``)
must not pay for."""
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from corpustok.arrow import utf8_batch


def row_group_texts(path, limit=None):
    """The ``text`` column of each row group of Parquet file ``path`` (the first ``limit``)
    as a kernel batch (``corpustok.arrow.Utf8Batch``), read one at a time."""
    pf = pq.ParquetFile(path)
    groups = pf.num_row_groups if limit is None else min(limit, pf.num_row_groups)
    for i in range(groups):
        yield utf8_batch(pf.read_row_group(i, columns=["text"]).column(0))


def leading_batch(paths, mb):
    """The first ``mb`` MB of documents (whole ones, at least one) of the ``text`` columns of
    Parquet files ``paths``, in order, as one kernel batch."""
    texts = pa.chunked_array([b.column(0) for path in paths
                              for b in pq.ParquetFile(path).iter_batches(columns=["text"])])
    lengths = pc.binary_length(texts).to_numpy(zero_copy_only=False)
    keep = max(1, int((lengths.cumsum() <= mb * 1e6).sum()))
    return utf8_batch(texts.slice(0, keep).combine_chunks())


def text_bytes(batch):
    """The bytes of text ``batch`` holds (its data buffer may be a slice's whole buffer)."""
    return int(batch.offsets[-1] - batch.offsets[0])


def new_chunk_cache(tok):
    """Give a BPE tokenizer a new chunk cache for this thread, as a job's first pass meets
    the text (other families have none)."""
    if hasattr(tok, "_caches"):
        tok._caches.use(None)
