"""Beam form of chunk counting, the distributable half of BPE training.

``CountChunks`` turns a PCollection of text batches (``pyarrow.Table`` with a text column,
``RecordBatch``, Arrow string arrays or lists of ``str``) into chunk counts. Each batch is
counted by one kernel call into a :class:`corpustok.bpe.train.ChunkCounts`; the tables are
then merged:

- ``CountChunks()`` (default): ``CombineGlobally`` with :class:`ChunkCountFn`, one
  ``ChunkCounts`` out (workers pre-combine; the final table is the corpus's unique chunks,
  usually a small fraction of the corpus). Feed it to ``train_from_counts``.
- ``CountChunks(per_chunk=True)``: ``(chunk, count)`` pairs combined per chunk
  (``CombinePerKey(sum)``), so not even the table of unique chunks has to fit one machine.
"""
import apache_beam as beam
import pyarrow as pa

from corpustok.bpe.train import ChunkCounts

__all__ = ["ChunkCountFn", "CountChunks"]


def _texts(batch, text_column):
    """The text array of one element (a table, record batch, Arrow array or list of str)."""
    if isinstance(batch, (pa.Table, pa.RecordBatch)):
        if text_column not in batch.schema.names:
            raise ValueError(f"text batch has no column {text_column!r} (columns: "
                             f"{', '.join(batch.schema.names)}); pass text_column=")
        return batch.column(text_column)
    return batch


class ChunkCountFn(beam.CombineFn):
    """CombineFn over text batches whose accumulator is a mergeable ``ChunkCounts``."""

    def __init__(self, text_column="text", pretokenizer="gpt2"):
        self._text_column = text_column
        self._pretokenizer = pretokenizer

    def create_accumulator(self):
        return ChunkCounts(self._pretokenizer)

    def add_input(self, counts, batch):
        return counts.add(_texts(batch, self._text_column))

    def merge_accumulators(self, accumulators):
        accumulators = iter(accumulators)
        first = next(accumulators)
        for other in accumulators:
            first.merge(other)
        return first

    def extract_output(self, counts):
        return counts


class _CountBatch(beam.DoFn):
    def __init__(self, text_column, pretokenizer):
        self._text_column = text_column
        self._pretokenizer = pretokenizer

    def process(self, batch):
        counts = ChunkCounts(self._pretokenizer).add(_texts(batch, self._text_column))
        yield from counts.to_dict().items()


class CountChunks(beam.PTransform):
    """Text batches -> one ``ChunkCounts`` (default) or ``(chunk, count)`` pairs
    (``per_chunk=True``), chunks cut by ``pretokenizer`` (a name or pattern the split kernel
    runs)."""

    def __init__(self, text_column="text", per_chunk=False, pretokenizer="gpt2"):
        super().__init__()
        self._text_column = text_column
        self._per_chunk = per_chunk
        self._pretokenizer = pretokenizer

    def expand(self, batches):
        if self._per_chunk:
            return (batches
                    | "CountBatch" >> beam.ParDo(_CountBatch(self._text_column,
                                                             self._pretokenizer))
                    | "SumPerChunk" >> beam.CombinePerKey(sum))
        return batches | "CountChunks" >> beam.CombineGlobally(
            ChunkCountFn(self._text_column, self._pretokenizer))
