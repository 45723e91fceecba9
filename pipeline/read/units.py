"""Reading units and their readers: which kind an input is (by its name), its units (a
Parquet row group, a whole JSONL or text file: :func:`plan_units`) and the reader of a unit
(:func:`read_unit`: ``parquet``, ``jsonl`` or ``text``).

A ``DocBatch`` is a contiguous row range of one input file, and is exactly one output shard:
its range comes from the Parquet footer (row groups re-sliced to ``shard_bytes`` of text) or
from the line count of a JSONL or text file (``text.line_ranges``), so shard names depend
only on the input and the options, never on the runner's bundling. The generators are plain
Python, used by the Beam transforms and by non-Beam code (verification, training) alike.
"""
from corpustok.schemas import InputFormatError

from corpustok.pipeline import files
from corpustok.pipeline.batches import Unit
from corpustok.pipeline.files.compression import strip_compression
from corpustok.pipeline.read.errors import READ_ERRORS
from corpustok.pipeline.read.jsonl import read_jsonl
from corpustok.pipeline.read.parquet import parquet_units, read_parquet_unit
from corpustok.pipeline.read.spec import DEFAULT_SHARD_BYTES, DEFAULT_SHARD_ROWS, ReadSpec
from corpustok.pipeline.read.text import read_text

PARQUET_EXTS = (".parquet", ".pq")
JSONL_EXTS = (".jsonl", ".json", ".ndjson")
TXT_EXTS = (".txt",)


def input_kind(path: str) -> str:
    """``"parquet"``, ``"jsonl"`` or ``"txt"`` from the file name (compression suffixes
    allowed)."""
    base = strip_compression(path)
    if base.endswith(PARQUET_EXTS):
        return "parquet"
    if base.endswith(JSONL_EXTS):
        return "jsonl"
    if base.endswith(TXT_EXTS):
        return "txt"
    raise ValueError(f"{files.shown(path)}: unknown input type; expected .parquet, .jsonl or "
                     ".txt (the last two also .gz, .xz or .zst)")


def plan_units(path, spec: ReadSpec):
    """Reading units of one input file (JSONL and text files are one sequential unit)."""
    kind = input_kind(path)
    if kind == "parquet":
        return parquet_units(path, spec)
    return [Unit(path, kind)]


def read_unit(unit: Unit, spec: ReadSpec, is_done=None, on_bytes=None):
    """``DocBatch`` ranges (or done ``(start, stop)`` pairs) of one reading unit, as ``spec``
    says (a text file's documents per ``spec.txt_docs``: ``read_text``). ``on_bytes``: called
    with the stored bytes of the input as they are read (a job's progress line), if given."""
    if unit.kind == "txt":
        return read_text(unit.source, spec, is_done, on_bytes)
    if unit.kind == "jsonl":
        return read_jsonl(unit.source, spec, is_done, on_bytes)
    return read_parquet_unit(unit, spec, is_done, on_bytes)


def read_documents(path, id_column="id", text_column="text", shard_bytes=DEFAULT_SHARD_BYTES,
                   shard_rows=DEFAULT_SHARD_ROWS, id_type="string", txt_docs="line", keep=(),
                   spec=None, on_bytes=None):
    """All ``DocBatch`` ranges of one input file, in order, without Beam, read as ``spec``
    says (default: a spec of the other arguments); ``on_bytes``: as :func:`read_unit`'s.
    Raises InputFormatError (a ValueError) naming the file when it cannot be read."""
    if spec is None:
        spec = ReadSpec(id_column, text_column, id_type, txt_docs, shard_bytes, shard_rows,
                        tuple(keep))
    try:
        for unit in plan_units(path, spec):
            yield from read_unit(unit, spec, on_bytes=on_bytes)
    except READ_ERRORS as e:
        if isinstance(e, InputFormatError) and e.path is not None:
            raise  # already names the file
        shown = files.shown(path)
        raise InputFormatError(f"{shown}: {type(e).__name__}: {e}", path=shown) from e
