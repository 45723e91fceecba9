"""Installed as ``corpustok.schemas`` (``setup.py`` maps this folder; a checkout finds it beside ``corpustok/``).

Arrow schemas of documents in, token rows out and manifests, with validation helpers.

The pipeline renames the user's id/text columns to ``id``/``text`` when it reads them, so
everything past the reader sees one fixed shape. Token shards record where each row came from
(``source`` file and ``row`` in it) so a shard can always be traced back to its input.

Ids keep their kind: a job whose inputs have integer ids (any Parquet integer column, JSON
integers) writes them as ``int64``, one with string ids as ``large_string`` (also the type of
the null ids of inputs without ids), so that readers sort and join them as the input did. One
job has one id type (a folder read as one table needs one schema): :data:`ID_KINDS` names
them, ``TokenizeConfig.id_type`` holds the job's. ``source`` is the input's canonical name:
the absolute, normalized path of a local file (symbolic links kept as named), a remote URL
as given.
"""
import pyarrow as pa

ID_TYPES = (pa.string(), pa.large_string(), pa.int8(), pa.int16(), pa.int32(), pa.int64(),
            pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64())
TEXT_TYPES = (pa.string(), pa.large_string(), pa.binary(), pa.large_binary())

# The id types of a job's documents, shards and rejects (the config's ``id_type``).
ID_KINDS = {"string": pa.large_string(), "int64": pa.int64()}

# Documents as they travel between the reader and the tokenizer (``id``: one of ID_KINDS).
DOCUMENTS = pa.schema([
    pa.field("id", pa.large_string()),
    pa.field("text", pa.large_string()),  # or string/binary/large_binary, as read
    pa.field("row", pa.int64(), nullable=False),  # row (Parquet) or line (JSONL), 0-based
    pa.field("replaced", pa.int64(), nullable=False),  # U+FFFD put in by the reader
])

# One row per kept document in a token shard (``id``: one of ID_KINDS, see with_id_type).
TOKENS = pa.schema([
    pa.field("id", pa.large_string()),
    pa.field("tokens", pa.list_(pa.int32()), nullable=False),  # large_list past 2**31 ids
    pa.field("n_tokens", pa.int64(), nullable=False),
    pa.field("n_bytes", pa.int64(), nullable=False),  # UTF-8 bytes of the text tokenized
    pa.field("replaced", pa.int64(), nullable=False),  # U+FFFD replacements (bad UTF-8, surrogates)
    pa.field("source", pa.string(), nullable=False),
    pa.field("row", pa.int64(), nullable=False),
])

# One row per rejected document (the optional rejects Parquet file).
REJECTS = pa.schema([
    pa.field("id", pa.large_string()),
    pa.field("source", pa.string(), nullable=False),
    pa.field("row", pa.int64(), nullable=False),
    pa.field("reason", pa.string(), nullable=False),
    pa.field("detail", pa.string()),
])



def with_id_type(schema: pa.Schema, id_type: pa.DataType) -> pa.Schema:
    """``schema`` (DOCUMENTS, TOKENS or REJECTS) with an ``id`` column of ``id_type`` (one of
    ID_KINDS' values)."""
    return schema.set(schema.get_field_index("id"), pa.field("id", id_type))


REJECT_REASONS = {
    "null_text": "the text is null",
    "empty_text": "the text is empty",
    "bad_json": "the JSONL line is not valid JSON (or nested too deep to parse)",
    "bad_id": "the id is not valid Unicode text (e.g. a lone surrogate escape)",
    "bad_record": "the JSON value is not an object with a string text field and an id",
}

# Keys of one shard's manifest entry (``.corpustok/entries/<shard>.json``) and of the run
# manifest (``.corpustok/manifest.json``).
# The keys every entry has had (what a run needs to list and remove an earlier layout's
# shards), and those of this layout's entries: the shard file's sha256 and the name its rows
# give their input.
LISTED_ENTRY_KEYS = ("shard", "file", "source", "rows", "documents", "tokens", "bytes",
                     "replaced", "rejects", "rejected", "input_sha256", "parquet_bytes",
                     "tokenizer_sha256", "config")
SHARD_ENTRY_KEYS = LISTED_ENTRY_KEYS + ("sha256", "name")
RUN_MANIFEST_KEYS = ("format", "version", "status", "tokenizer_sha256", "config", "totals",
                     "errors", "shards")
MANIFEST_FORMAT = "corpustok-shards"
MANIFEST_VERSION = 2  # 2: entries with sha256 and name, the tokenizer's name and size


class InputFormatError(ValueError):
    """An input file whose layout cannot be read as documents (a missing or mistyped column,
    fields no record has, fewer rows than its footer says): counted against that file, the
    rest of the job goes on. ``path`` is set when the message already names the file."""

    def __init__(self, message, path=None):
        super().__init__(message)
        self.path = path


class ColumnTypeError(InputFormatError, TypeError):
    """An input column of a type documents cannot have."""


def _type_list(types):
    return ", ".join(str(t) for t in types)


def check_document_columns(schema: pa.Schema, id_column, text_column: str, where: str):
    """Raise a clear error when ``schema`` lacks the id/text columns or they have wrong types.

    ``id_column`` None: the input has no ids. ``where`` names the input (file name) in the
    message.
    """
    names = schema.names
    for role, col, types, flag in (
            ("text", text_column, TEXT_TYPES, "--text-column (for this input alone: "
                                              "INPUT:text=COL)"),
            ("id", id_column, ID_TYPES, "--id-column or --no-id (for this input alone: "
                                        "INPUT:id=COL or INPUT:no-id)")):
        if col is None:
            continue
        if col not in names:
            raise InputFormatError(f"{where}: missing {role} column {col!r} (columns: "
                                   f"{', '.join(names) or 'none'}); choose another with {flag}",
                                   path=where)
        t = schema.field(col).type
        if pa.types.is_dictionary(t):  # pandas categoricals: read as their values
            t = t.value_type
        if t not in types:
            raise ColumnTypeError(f"{where}: {role} column {col!r} has type {t}, expected one of "
                                  f"{_type_list(types)}", path=where)


def check_table(table: pa.Table, schema: pa.Schema, where: str = "table", extra=()):
    """Raise ValueError/TypeError when ``table`` does not have exactly ``schema``'s columns
    (names and types; a large_list/large_binary stand-in is accepted for list/string data,
    an ``id`` of any of ID_KINDS), then the columns named ``extra`` (the job's kept columns,
    of any type), or ``extra=None``: any columns after the schema's."""
    names = table.schema.names
    own = names[:len(schema.names)]
    if own != schema.names or (extra is not None and names[len(own):] != list(extra)):
        expected = schema.names + ([] if extra is None else list(extra))
        raise ValueError(f"{where}: columns {names}, expected {expected}")
    for field in schema:
        t = table.schema.field(field.name).type
        ok = t == field.type or (pa.types.is_large_list(t) and pa.types.is_list(field.type)
                                 and t.value_type == field.type.value_type) or \
            (field.name == "text" and t in TEXT_TYPES) or \
            (field.name == "id" and t in ID_KINDS.values())
        if not ok:
            raise TypeError(f"{where}: column {field.name!r} has type {t}, expected {field.type}")


def check_shard_entry(entry: dict, where: str = "manifest entry", keys=SHARD_ENTRY_KEYS):
    """Raise ValueError when a shard manifest entry lacks ``keys`` or has inconsistent
    counts."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a JSON object, found {type(entry).__name__}")
    missing = [k for k in keys if k not in entry]
    if missing:
        raise ValueError(f"{where}: missing keys {missing}")
    start, stop = entry["rows"]
    if not 0 <= start <= stop:
        raise ValueError(f"{where}: bad row range {entry['rows']}")
    if entry["documents"] + sum(entry["rejects"].values()) > stop - start:
        raise ValueError(f"{where}: {entry['documents']} documents + rejects exceed the "
                         f"{stop - start} rows of range {entry['rows']}")
    unknown = set(entry["rejects"]) - set(REJECT_REASONS)
    if unknown:
        raise ValueError(f"{where}: unknown reject reasons {sorted(unknown)}")


def check_run_manifest(manifest: dict, where: str = "run manifest"):
    """Raise ValueError when a run manifest is malformed or its totals disagree with its shards."""
    missing = [k for k in RUN_MANIFEST_KEYS if k not in manifest]
    if missing:
        raise ValueError(f"{where}: missing keys {missing}")
    if manifest["format"] != MANIFEST_FORMAT:
        raise ValueError(f"{where}: format {manifest['format']!r}, expected {MANIFEST_FORMAT!r}")
    for i, s in enumerate(manifest["shards"]):
        check_shard_entry(s, f"{where}: shards[{i}]")
    for key in ("documents", "tokens", "bytes"):
        total = sum(s[key] for s in manifest["shards"])
        if manifest["totals"][key] != total:
            raise ValueError(f"{where}: totals.{key} = {manifest['totals'][key]} but the shards "
                             f"sum to {total}")
