"""What the readers produce: ``DocBatch``, a row range of one input file as a DOCUMENTS table.

Its own module so that the readers of each format (``read`` for Parquet and JSONL,
``read_text`` for plain text) build it one way without importing each other.
"""
from dataclasses import dataclass, field

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
