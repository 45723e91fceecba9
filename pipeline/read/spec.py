"""How an input is read into documents: one value, ``ReadSpec``, passed from the job's options
down to the readers, instead of positional columns and sizes through every call.

``keep``: columns (Parquet) or fields (JSONL) carried into the shards beside the tokens, for
mixture weights and filtering (``lang``, ``url``, ``quality``): ``KeepColumn(name, type)``,
``name`` a column or, with dots, a nested field (``meta.lang``: field ``lang`` of the struct
column or JSON object ``meta``; a column whose own name holds the dots wins), ``type`` one of
:data:`KEEP_TYPES`. The shards get a column named ``name`` of that type after their own;
an input without the column or field, and a text input, gives nulls.
"""
from dataclasses import dataclass, replace
from typing import Optional

import pyarrow as pa

DEFAULT_SHARD_BYTES = 64 << 20  # text bytes per shard
DEFAULT_SHARD_ROWS = 1 << 20
TXT_DOCS = ("line", "paragraph")  # what a document of a .txt input is (read.text)
# The types a kept column may have in the shards (one folder, one schema: declared, not found).
KEEP_TYPES = {"string": pa.large_string(), "int64": pa.int64(), "float64": pa.float64(),
              "bool": pa.bool_()}


@dataclass(frozen=True)
class KeepColumn:
    """A column or nested field carried into the shards, and its type there."""

    name: str
    type: str = "string"

    @classmethod
    def parse(cls, text):
        """``NAME`` or ``NAME:TYPE`` (the last ``:`` before a type of :data:`KEEP_TYPES`)."""
        name, sep, kind = text.rpartition(":")
        if not sep or kind not in KEEP_TYPES:
            name, kind = text, "string"
        if not name or name.startswith(".") or name.endswith(".") or ".." in name:
            raise ValueError(f"--keep-column {text!r}: a column name, or a nested field as "
                             f"a.b, with an optional :TYPE ({', '.join(KEEP_TYPES)})")
        return cls(name, kind)

    @property
    def arrow_type(self):
        return KEEP_TYPES[self.type]

    def __str__(self):
        return f"{self.name}:{self.type}"


@dataclass(frozen=True)
class ReadSpec:
    """How an input is read: its id and text columns (``id_column`` None: no ids), the id
    type of the job's documents, what a document of a ``.txt`` input is, the shard sizes and
    the kept columns."""

    id_column: Optional[str] = "id"
    text_column: str = "text"
    id_type: str = "string"
    txt_docs: str = "line"
    shard_bytes: int = DEFAULT_SHARD_BYTES
    shard_rows: int = DEFAULT_SHARD_ROWS
    keep: tuple = ()

    def with_columns(self, mapping):
        """This spec for an input read with its own columns (``inputs.mapping_of``: a dict
        with ``id`` and ``text``), or itself (``mapping`` None)."""
        if mapping is None:
            return self
        return replace(self, id_column=mapping["id"], text_column=mapping["text"])
