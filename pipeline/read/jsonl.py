"""Reading a JSONL input (plain or compressed): lines cut into shard ranges
(``text.line_ranges``), each line a JSON object whose id and text fields (and kept fields)
become a ``DocBatch`` row, or a reject with its reason."""
import decimal
import json

import numpy as np
import pyarrow as pa

from corpustok.arrow import decode_replacing, string_array, utf8_batch
from corpustok.schemas import ID_KINDS, REJECTS, InputFormatError, with_id_type

from corpustok.pipeline import files
from corpustok.pipeline.batches import DocBatch, documents
from corpustok.pipeline.read.spec import KeepColumn, ReadSpec
from corpustok.pipeline.read.text import line_ranges

INT64_MAX = (1 << 63) - 1


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


def read_jsonl(source, spec: ReadSpec, is_done=None, on_bytes=None):
    """Yield ``DocBatch`` ranges of a JSONL file (plain, .gz or .zst), read sequentially;
    a range ends when it holds ``spec.shard_bytes`` of line bytes or ``spec.shard_rows``
    lines. Ranges ``is_done(source, start, stop)`` says are complete are yielded as
    ``(start, stop)`` without parsing. A truncated or corrupt file yields what it could read
    and verify, then raises ``ReadFailure``; an id an integer job cannot hold (or a kept
    field its type cannot) raises InputFormatError after the ranges before its own (the
    message says which lines those are). ``on_bytes``: as :func:`read_unit`'s."""
    for start, stop, lines in line_ranges(source, spec.shard_bytes, spec.shard_rows,
                                          on_bytes=on_bytes):
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
