"""Reading documents from Parquet, JSONL and text files into bounded Arrow tables
(``DocBatch``).

A ``DocBatch`` is a contiguous row range of one input file, and is exactly one output shard:
its range comes from the Parquet footer (row groups re-sliced to ``shard_bytes`` of text) or
from the line count of a JSONL or text file (``read_text.line_ranges``), so shard names depend
only on the input and the options, never on the runner's bundling. The generators here are
plain Python, used by the Beam transforms and by non-Beam code (verification, training) alike.
"""
import decimal
import hashlib
import json
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpustok._arrow import decode_replacing, string_array, utf8_batch
from corpustok.pipeline.compression import strip_compression
from corpustok.schemas import (ID_KINDS, REJECTS, InputFormatError, check_document_columns,
                               with_id_type)

from corpustok.pipeline import files, progress
from corpustok.pipeline.documents import DocBatch, documents
from corpustok.pipeline.read_spec import (DEFAULT_SHARD_BYTES, DEFAULT_SHARD_ROWS, KeepColumn,
                                          ReadSpec)
from corpustok.pipeline.read_text import ReadFailure, line_ranges, read_text

INT64_MAX = (1 << 63) - 1
PARQUET_EXTS = (".parquet", ".pq")
JSONL_EXTS = (".jsonl", ".json", ".ndjson")
TXT_EXTS = (".txt",)
__all__ = ["DocBatch", "ReadError", "ReadFailure", "ReadSpec", "KeepColumn", "Unit",
           "input_kind", "shard_name", "plan_units", "read_unit", "read_jsonl", "read_documents",
           "READ_ERRORS", "DEFAULT_SHARD_BYTES", "DEFAULT_SHARD_ROWS"]


@dataclass
class ReadError:
    """An input that could not be read (wholly or from some point on). ``verified_rows``
    (JSONL and text files): its leading lines known sound (``ReadFailure``); the shards of
    its ranges that end past them are removed when the run manifest is written (None: every
    shard of it this run made stays)."""

    source: str
    error: str
    verified_rows: Optional[int] = None


@dataclass(frozen=True)
class Unit:
    """A piece of reading work: one Parquet row group, or one whole JSONL or text file."""

    source: str
    kind: str  # "parquet", "jsonl" or "txt"
    row_group: int = -1
    first_row: int = 0
    rows_per_shard: int = 0  # Parquet: slice size chosen from the footer


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


def shard_name(source: str, start: int, stop: int, config_id: str, mapping=None,
               name=None) -> str:
    """Deterministic shard name ``part-<input>-<config>-<start>-<stop>``: a hash of the
    input's absolute path, size and modification time (so a changed input never reuses
    shards of its old content), of its own columns, ``mapping`` (``inputs.mapping_of``: the
    file read with other columns is another input) and of ``name``, what its rows' ``source``
    column says (``inputs.source_name``) when it is not the input's shown canonical name; the
    first 8 digits of the job's configuration hash
    (two jobs never share a name) and the row range. Hex digits and decimal numbers only:
    no reader takes such a name for hidden (``_``, ``.``) or for a split (``train``,
    ``test``, ``valid``, ``dev``, ``eval``: Hugging Face ``datasets`` infers splits from
    words in file names, so a name must not carry the input's own), and no filesystem reads
    it as a glob."""
    identity = files.identity(source)
    if mapping is not None:
        identity += "\0" + json.dumps(mapping, sort_keys=True)
    if name is not None and name != files.shown(source):
        identity += "\0name\0" + name
    digest = hashlib.sha1(identity.encode("utf-8", "surrogatepass")).hexdigest()
    return f"part-{digest[:10]}-{config_id[:8]}-{start:010d}-{stop:010d}"


def parquet_units(path, spec: ReadSpec):
    """One ``Unit`` per row group of ``path``, with the slice size that keeps a shard near
    ``spec.shard_bytes`` of (uncompressed) text. Raises on an unreadable footer or bad
    columns."""
    with files.parquet_file(path) as pf:
        check_document_columns(pf.schema_arrow, spec.id_column, spec.text_column,
                               files.shown(path))
        md = pf.metadata
    # The text column's Parquet leaf (exact path first: column names may contain dots).
    paths = [md.schema.column(i).path for i in range(md.num_columns)]
    text = spec.text_column
    leaf = paths.index(text) if text in paths else \
        next(i for i, p in enumerate(paths) if p.split(".")[0] == text)
    units = []
    first = 0
    for rg in range(md.num_row_groups):
        g = md.row_group(rg)
        nbytes = max(1, g.column(leaf).total_uncompressed_size)
        per = max(1, min(spec.shard_rows, g.num_rows * spec.shard_bytes // nbytes))
        units.append(Unit(path, "parquet", rg, first, int(per)))
        first += g.num_rows
    return units


def plan_units(path, spec: ReadSpec):
    """Reading units of one input file (JSONL and text files are one sequential unit)."""
    kind = input_kind(path)
    if kind == "parquet":
        return parquet_units(path, spec)
    return [Unit(path, kind)]


def unit_ranges(unit: Unit, num_rows: int):
    """The ``(start, stop)`` shard ranges of a Parquet unit holding ``num_rows`` rows."""
    step = unit.rows_per_shard
    return [(unit.first_row + a, unit.first_row + min(a + step, num_rows))
            for a in range(0, num_rows, step)]


def read_parquet_unit(unit: Unit, spec: ReadSpec, is_done=None):
    """Yield ``DocBatch`` slices of one row group (bounded: streamed in record batches), or
    ``(start, stop)`` tuples for slices ``is_done(source, start, stop)`` says are complete."""
    with files.parquet_file(unit.source) as pf:
        yield from _read_row_group(pf, unit, spec, is_done)


def _read_row_group(pf, unit: Unit, spec: ReadSpec, is_done):
    num_rows = pf.metadata.row_group(unit.row_group).num_rows
    ranges = unit_ranges(unit, num_rows)
    done = [bool(is_done and is_done(unit.source, a, b)) for a, b in ranges]
    row_bytes = progress.row_share(unit.source, pf.metadata.num_rows)
    for (a, b), d in zip(ranges, done):
        if d:
            progress.report((b - a) * row_bytes)
            yield (a, b)
    if all(done):
        return
    pending = []
    have = 0
    k = 0
    id_column, text_column = spec.id_column, spec.text_column
    names = pf.schema_arrow.names
    columns = list(dict.fromkeys(([] if id_column is None else [id_column]) + [text_column] +
                                 [c for c in (_top_column(names, keep.name) for keep in spec.keep)
                                  if c is not None]))
    batches = pf.iter_batches(batch_size=min(unit.rows_per_shard, 65536),
                              row_groups=[unit.row_group], columns=columns, use_threads=False)
    for rb in batches:
        progress.report(rb.num_rows * row_bytes)
        pending.append(rb)
        have += rb.num_rows
        while k < len(ranges) and have >= ranges[k][1] - ranges[k][0]:
            a, b = ranges[k]
            t = pa.Table.from_batches(pending)
            if not done[k]:
                piece = t.slice(0, b - a)
                ids = pa.nulls(b - a, pa.large_string()) if id_column is None else \
                    _decoded(piece.column(id_column))
                kept = [(keep, _kept_parquet(piece, keep, unit.source)) for keep in spec.keep]
                yield DocBatch(unit.source, a, b, documents(
                    ids, _decoded(piece.column(text_column)), np.arange(a, b),
                    id_type=spec.id_type, kept=kept), has_ids=id_column is not None)
            rest = t.slice(b - a)
            pending = rest.to_batches()
            have = rest.num_rows
            k += 1
    if k != len(ranges):
        raise InputFormatError(f"row group {unit.row_group} ended early: the footer "
                               f"promises {num_rows} rows")


def _decoded(column):
    """A column with its dictionary encoding undone (pandas categoricals: the values)."""
    if pa.types.is_dictionary(column.type):
        return pc.cast(column, column.type.value_type)
    return column


def _top_column(names, name):
    """The top-level column a kept column is read from: ``name`` itself, or the struct its
    first dotted part names; None when the file has neither (the values are null)."""
    if name in names:
        return name
    top = name.split(".")[0]
    return top if top != name and top in names else None


def _kept_parquet(table, keep: KeepColumn, source):
    """The kept column ``keep`` of a Parquet slice, of its declared type (nulls where the file
    has no such column or field); InputFormatError when its values cannot be that type."""
    names = table.schema.names
    top = _top_column(names, keep.name)
    if top is None:
        return pa.nulls(table.num_rows, keep.arrow_type)
    column = table.column(top)
    if top != keep.name:
        for part in keep.name.split(".")[1:]:
            column = _decoded(column)
            if not pa.types.is_struct(column.type) or column.type.get_field_index(part) < 0:
                return pa.nulls(table.num_rows, keep.arrow_type)
            column = pc.struct_field(column, part)
    column = _decoded(column)
    t = column.type
    fits = {"string": lambda: pa.types.is_string(t) or pa.types.is_large_string(t) or
            pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t),
            "int64": lambda: pa.types.is_integer(t) or pa.types.is_floating(t),
            "float64": lambda: pa.types.is_integer(t) or pa.types.is_floating(t),
            "bool": lambda: pa.types.is_boolean(t)}[keep.type]()
    try:
        if not fits:
            raise pa.ArrowInvalid(f"a column of type {t}")
        return pc.cast(column, keep.arrow_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InputFormatError(f"{files.shown(source)}: --keep-column {keep}: {keep.name!r} "
                               f"cannot be read as {keep.type} ({e})") from None


class _Number(str):
    """A JSON number with a fraction or an exponent (or ``NaN``, ``Infinity``), as written:
    a string job's id keeps its text (``1e2`` is ``"1e2"``, not ``"100.0"``) and an integer
    job reads ``7.0`` exactly (``decimal``), not through a float."""

    __slots__ = ()


# Records are parsed as json.loads parses them, but for numbers with a fraction or exponent and
# JSON's constants, which keep their text (the hooks are called for those alone).
_JSON = json.JSONDecoder(parse_float=_Number, parse_constant=_Number)


class _IdNotInteger(InputFormatError):
    """A JSON id an integer job cannot hold: it fails the file (``read_jsonl``)."""


def _id_text(value):
    """A JSON id's text as written: a string itself, an integer's decimal digits, a number's
    literal (``_Number``), ``true`` or ``false``."""
    if type(value) is bool:
        return "true" if value else "false"
    return str(value)  # str() of a _Number: a plain str of its text


def _exact_int64(value):
    """``value`` (a parsed JSON value) as an integer of int64's range when it is exactly one
    (an ``int``, or a number such as ``7.0`` or ``1e2``), else None."""
    if type(value) is int:
        return value if -INT64_MAX - 1 <= value <= INT64_MAX else None
    if type(value) is _Number:
        number = decimal.Decimal(value)  # NaN and Infinity too: not finite
        if number.is_finite() and number == number.to_integral_value() and \
                number.adjusted() < 19:  # no int() of 1e999999999
            value = int(number)
            return value if -INT64_MAX - 1 <= value <= INT64_MAX else None
    return None


def _int64_id(value, no, id_column):
    """An integer job's id from a JSON id that is not an ``int`` of int64's range: a number
    whose value is exactly such an integer (``7.0``, ``1e2``). Anything else (a string,
    ``7.5``, ``true``, a number past int64's range) raises ``_IdNotInteger``: a file holding
    ids the job's type cannot hold fails there, named, rather than losing rows as rejects."""
    exact = _exact_int64(value)
    if exact is not None:
        return exact
    integral = type(value) is int or (type(value) is _Number and
                                      decimal.Decimal(value).is_finite() and
                                      decimal.Decimal(value) ==
                                      decimal.Decimal(value).to_integral_value())
    shown = json.dumps(value[:100]) if type(value) is str else _id_text(value)
    what = "past int64's range" if integral else "not an integer"
    raise _IdNotInteger(f"line {no}: id {shown[:100]} (field {id_column!r}) is {what}, but "
                        "this job's ids are integers (decided from the first ids of its "
                        "inputs): rerun with --id-type string (and --overwrite)")


def _json_kind(value):
    """The kind of a parsed JSON value, for messages (``float`` for a ``_Number``)."""
    return "float" if type(value) is _Number else type(value).__name__


def _refuse_json_array(line, rec):
    """Raise InputFormatError when a file's first line shows it is one JSON array, not JSON
    Lines: a line that starts with ``[`` and is not JSON by itself (a pretty-printed array), or
    an array of objects on one line. Read as JSONL, every line of it would be a reject."""
    if not line.lstrip("\ufeff \t").startswith("["):
        return
    if rec is None or (isinstance(rec, list) and rec and all(isinstance(r, dict) for r in rec)):
        raise InputFormatError(
            "the file is one JSON array (its first line starts with '['), not JSON Lines (one "
            "object per line); convert it, e.g. jq -c '.[]' FILE > FILE.jsonl")


def _parse_lines(source, lines, spec: ReadSpec, check_fields=False):
    """Parse ``(line_no, raw)`` JSONL lines into a DOCUMENTS table and a REJECTS table, ids of
    kind ``id_type``: with integer ids an id must be an exact integer of int64's range (a JSON
    integer, or a number such as ``7.0`` or ``1e2``), anything else raises ``_IdNotInteger``;
    with string ids every JSON id keeps its text as written (``17`` -> ``"17"``, ``1e2`` ->
    ``"1e2"``, ``true`` -> ``"true"``), one that is not valid Unicode (a lone surrogate
    escape) is a ``bad_id`` reject.

    With ``check_fields`` (a file's first range), raise InputFormatError when no JSON object has
    both fields: the names are wrong for the whole file (as a missing Parquet column), not
    a few bad records. ``id_column`` None: the records have no ids (null ids). The kept
    fields (``spec.keep``) are read as their declared types (``_kept_json``)."""
    id_column, text_column, id_type = spec.id_column, spec.text_column, spec.id_type
    ids, texts, rows, replaced = [], [], [], []
    kept = [[] for _ in spec.keep]
    rej = {"id": [], "row": [], "reason": [], "detail": []}
    objects = lacking = 0
    keys = {}  # field names of the objects that lack one, in order of appearance
    decode = _JSON.decode

    def reject(no, reason, detail, doc_id=None):
        rej["id"].append(doc_id)
        rej["row"].append(no)
        rej["reason"].append(reason)
        rej["detail"].append(detail)

    for no, raw in lines:
        fixed = 0
        try:
            try:
                line = raw.decode("utf-8", "surrogatepass")  # as json.loads decodes bytes
            except UnicodeDecodeError:  # invalid UTF-8 in the line: replace, count, go on
                line, fixed = decode_replacing(raw)
            try:
                rec = decode(line)
            except ValueError:
                if not line.startswith("\ufeff"):  # a byte order mark, which json.loads skips
                    raise
                rec = decode(line[1:])
        except ValueError as e:
            if check_fields and not objects and not rej["row"]:
                _refuse_json_array(line, None)
            reject(no, "bad_json", str(e)[:200])
            continue
        except RecursionError:
            reject(no, "bad_json", "nested too deep to parse")
            continue
        if check_fields and not objects and not rej["row"]:
            _refuse_json_array(line, rec)
        if not isinstance(rec, dict):
            reject(no, "bad_record", f"a JSON {_json_kind(rec)}, not an object")
            continue
        objects += 1
        if (id_column is not None and id_column not in rec) or text_column not in rec:
            lacking += 1
            if len(keys) < 20:  # enough to name in the error
                keys.update(dict.fromkeys(list(rec)[:20]))
        doc_id = None
        if id_column is not None:
            doc_id = rec.get(id_column)
            if doc_id is None or isinstance(doc_id, (dict, list)):
                reject(no, "bad_record", f"no usable {id_column!r} field")
                continue
            if id_type == "int64":
                if type(doc_id) is not int or not -INT64_MAX - 1 <= doc_id <= INT64_MAX:
                    doc_id = _int64_id(doc_id, no, id_column)
            else:
                if type(doc_id) is not str:
                    doc_id = _id_text(doc_id)
                if not files.is_utf8(doc_id):
                    reject(no, "bad_id",
                           f"{id_column!r} is not valid Unicode: {ascii(doc_id)[:200]}")
                    continue
        if text_column not in rec:
            reject(no, "bad_record", f"no {text_column!r} field", doc_id)
            continue
        text = rec[text_column]
        if text is not None and type(text) is not str:
            reject(no, "bad_record", f"{text_column!r} is a {_json_kind(text)}", doc_id)
            continue
        ids.append(doc_id)
        texts.append(text)
        rows.append(no)
        replaced.append(fixed)
        for values, keep in zip(kept, spec.keep):
            values.append(_kept_json(rec, keep, no))
    if check_fields and objects and lacking == objects:
        seen = ", ".join(list(keys)[:20]) or "none"
        wanted = f"the text field {text_column!r}" if id_column is None else \
            f"both the id field {id_column!r} and the text field {text_column!r}"
        raise InputFormatError(f"no JSON object has {wanted} (fields seen: {seen}); choose "
                               "them with --id-column and --text-column (--no-id if there are "
                               "no ids), or for this input alone as INPUT:id=FIELD,text=FIELD")
    # utf8_batch replaces lone surrogates (JSON "\ud800" escapes) by U+FFFD and counts them.
    tb = utf8_batch(texts)
    rep = np.asarray(replaced, np.int64)
    if tb.replaced is not None:
        rep = rep + tb.replaced
    text_arr = string_array(tb.offsets, tb.data, tb.valid)
    docs = documents(pa.array(ids, ID_KINDS[id_type]), text_arr, rows, rep, id_type,
                     [(keep, pa.array(values, keep.arrow_type))
                      for keep, values in zip(spec.keep, kept)])
    shown = files.shown(source)
    rejects = pa.table({"id": pa.array(rej["id"], ID_KINDS[id_type]),
                        "source": pa.array([shown] * len(rej["row"]), pa.string()),
                        "row": pa.array(rej["row"], pa.int64()),
                        "reason": pa.array(rej["reason"], pa.string()),
                        "detail": pa.array(rej["detail"], pa.string())},
                       schema=with_id_type(REJECTS, ID_KINDS[id_type]))
    return docs, rejects


def _kept_json(rec, keep: KeepColumn, no):
    """The value of kept field ``keep`` in record ``rec`` (line ``no``), of its declared
    type: null when absent; a string keeps a JSON value's text as written (an object or an
    array as compact JSON); an integer must be exact, a float any number; anything else
    fails the file (``_IdNotInteger``'s kind: one clear refusal, not a silent null)."""
    value = rec.get(keep.name)
    if value is None and keep.name not in rec and "." in keep.name:
        value = rec
        for part in keep.name.split("."):
            value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return None
    kind = keep.type
    if kind == "string":
        if isinstance(value, (dict, list)):
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return value if type(value) is str else _id_text(value)
    if kind == "bool" and type(value) is bool:
        return value
    if kind == "int64" and type(value) is not bool:
        exact = _exact_int64(value)
        if exact is not None:
            return exact
    if kind == "float64" and type(value) is not bool and isinstance(value, (int, _Number)):
        return float(value)
    shown = "..." if isinstance(value, (dict, list)) else \
        json.dumps(value[:60]) if type(value) is str else _id_text(value)[:60]
    raise _IdNotInteger(f"line {no}: field {keep.name!r} is {shown} (a {_json_kind(value)}), "
                        f"not a {kind} of --keep-column {keep}")


def read_jsonl(source, spec: ReadSpec, is_done=None):
    """Yield ``DocBatch`` ranges of a JSONL file (plain, .gz or .zst), read sequentially;
    a range ends when it holds ``spec.shard_bytes`` of line bytes or ``spec.shard_rows``
    lines. Ranges ``is_done(source, start, stop)`` says are complete are yielded as
    ``(start, stop)`` without parsing. A truncated or corrupt file yields what it could read
    and verify, then raises ``ReadFailure``; an id an integer job cannot hold (or a kept
    field its type cannot) raises InputFormatError after the ranges before its own (the
    message says which lines those are)."""
    for start, stop, lines in line_ranges(source, spec.shard_bytes, spec.shard_rows):
        if is_done and is_done(source, start, stop):
            yield (start, stop)
            continue
        try:
            docs, rejects = _parse_lines(source, lines, spec, start == 0)
        except _IdNotInteger as e:
            held = f"lines 0-{start - 1} are in the shards" if start else \
                "no line of it is in the shards"
            raise InputFormatError(f"{e}; {held}, the rest of the file is not") from e
        yield DocBatch(source, start, stop, docs, rejects,
                       has_ids=spec.id_column is not None)


def read_unit(unit: Unit, spec: ReadSpec, is_done=None):
    """``DocBatch`` ranges (or done ``(start, stop)`` pairs) of one reading unit, as ``spec``
    says (a text file's documents per ``spec.txt_docs``: ``read_text``)."""
    if unit.kind == "txt":
        return read_text(unit.source, spec, is_done)
    if unit.kind == "jsonl":
        return read_jsonl(unit.source, spec, is_done)
    return read_parquet_unit(unit, spec, is_done)


# What makes an input unreadable (counted against that file; the job goes on): I/O (OSError,
# which pyarrow's ArrowIOError is), a damaged compressed stream (ReadFailure), a layout we
# cannot read (InputFormatError), a file pyarrow finds invalid or uses a Parquet feature it
# lacks. Anything else raised while reading is a bug of ours and fails the job (exit 3).
READ_ERRORS = (OSError, ReadFailure, InputFormatError, pa.ArrowInvalid,
               pa.ArrowNotImplementedError)


def read_documents(path, id_column="id", text_column="text", shard_bytes=DEFAULT_SHARD_BYTES,
                   shard_rows=DEFAULT_SHARD_ROWS, id_type="string", txt_docs="line", keep=(),
                   spec=None):
    """All ``DocBatch`` ranges of one input file, in order, without Beam, read as ``spec``
    says (default: a spec of the other arguments). Raises InputFormatError (a ValueError)
    naming the file when it cannot be read."""
    if spec is None:
        spec = ReadSpec(id_column, text_column, id_type, txt_docs, shard_bytes, shard_rows,
                        tuple(keep))
    try:
        for unit in plan_units(path, spec):
            yield from read_unit(unit, spec)
    except READ_ERRORS as e:
        if isinstance(e, InputFormatError) and e.path is not None:
            raise  # already names the file
        shown = files.shown(path)
        raise InputFormatError(f"{shown}: {type(e).__name__}: {e}", path=shown) from e
