"""What flows between the stages of a job, one module so that each stage imports it and none
imports another stage for a type:

- :class:`Unit`: a piece of reading work, planned in the driver (``read.units.plan_units``);
- :class:`DocBatch`: a row range of one input as a DOCUMENTS table (the readers' output, one
  shard's worth), built by :func:`documents`;
- :class:`TokenBatch`: the same range tokenized (``encode.tokenize_batch``), what the shard
  writer writes (``output.shards.write_shard``);
- :class:`ReadError`: an input that could not be read (wholly or from some point on), which
  the run manifest lists.
"""
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpustok.schemas import ID_KINDS, REJECTS


@dataclass
class DocBatch:
    """Rows ``[start, stop)`` of ``source`` (documents in ``table``, schema ``DOCUMENTS``) and
    the rows the reader rejected (``rejects``, schema ``REJECTS``). ``has_ids`` False: the
    input has no id column (ids are null; rows are known by source and row). ``rejects``
    defaults to string ids: consumers cast it to the job's id type."""

    source: str
    start: int
    stop: int
    table: pa.Table
    rejects: pa.Table = field(default_factory=REJECTS.empty_table)
    has_ids: bool = True


def documents(ids, texts, rows, replaced=None, id_type="string", kept=()) -> pa.Table:
    """A DOCUMENTS table with ids of kind ``id_type`` (a checked cast: a Parquet uint64 past
    int64's range fails the file); the text keeps its Arrow type (no copy: it may be 100 MB).
    ``kept``: ``(KeepColumn, array)`` pairs, columns appended after DOCUMENTS' own."""
    n = len(rows)
    columns = {
        "id": pc.cast(ids, ID_KINDS[id_type]),
        "text": texts,
        "row": pa.array(rows, pa.int64()),
        "replaced": pa.array(np.zeros(n, np.int64) if replaced is None else replaced,
                             pa.int64()),
    }
    for keep, values in kept:
        columns[keep.name] = values
    return pa.table(columns)


@dataclass
class TokenBatch:
    """Token rows (schema ``TOKENS``) and rejects (schema ``REJECTS``) of one shard range
    of input ``source`` (its canonical name), whose rows say ``name`` in their ``source``
    column."""

    source: str
    start: int
    stop: int
    tokens: pa.Table
    rejects: pa.Table
    input_sha256: str
    name: str = ""


@dataclass(frozen=True)
class Unit:
    """A piece of reading work: one Parquet row group, or one whole JSONL or text file."""

    source: str
    kind: str  # "parquet", "jsonl" or "txt"
    row_group: int = -1
    first_row: int = 0
    rows_per_shard: int = 0  # Parquet: slice size chosen from the footer
    text_bytes: int = 0  # Parquet: the row group's text, uncompressed (footer); else unknown


@dataclass
class ReadError:
    """An input that could not be read (wholly or from some point on). ``verified_rows``
    (JSONL and text files): its leading lines known sound (``ReadFailure``); the shards of
    its ranges that end past them are removed when the run manifest is written (None: every
    shard of it this run made stays)."""

    source: str
    error: str
    verified_rows: Optional[int] = None
