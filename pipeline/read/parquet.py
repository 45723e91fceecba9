"""Reading a Parquet input: one reading unit per row group (planned from the footer, re-sliced
to ``shard_bytes`` of text), streamed in record batches into ``DocBatch`` ranges."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpustok.schemas import InputFormatError, check_document_columns

from corpustok.pipeline import files
from corpustok.pipeline.batches import DocBatch, Unit, documents
from corpustok.pipeline.read.spec import KeepColumn, ReadSpec


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
        units.append(Unit(path, "parquet", rg, first, int(per), int(nbytes)))
        first += g.num_rows
    return units


def unit_ranges(unit: Unit, num_rows: int):
    """The ``(start, stop)`` shard ranges of a Parquet unit holding ``num_rows`` rows."""
    step = unit.rows_per_shard
    return [(unit.first_row + a, unit.first_row + min(a + step, num_rows))
            for a in range(0, num_rows, step)]


def read_parquet_unit(unit: Unit, spec: ReadSpec, is_done=None, on_bytes=None):
    """Yield ``DocBatch`` slices of one row group (bounded: streamed in record batches), or
    ``(start, stop)`` tuples for slices ``is_done(source, start, stop)`` says are complete;
    ``on_bytes``, if given, is called with each read's share of the stored file."""
    with files.parquet_file(unit.source) as pf:
        yield from _read_row_group(pf, unit, spec, is_done, on_bytes)


def _row_share(path, num_rows):
    """Stored bytes of ``path`` per row of its ``num_rows``: what a Parquet reader reports
    per row read (0 when it cannot be sized)."""
    if num_rows <= 0:
        return 0
    try:
        return files.size(path) / num_rows
    except OSError:
        return 0


def _read_row_group(pf, unit: Unit, spec: ReadSpec, is_done, on_bytes):
    num_rows = pf.metadata.row_group(unit.row_group).num_rows
    ranges = unit_ranges(unit, num_rows)
    done = [bool(is_done and is_done(unit.source, a, b)) for a, b in ranges]
    row_bytes = 0 if on_bytes is None else _row_share(unit.source, pf.metadata.num_rows)
    report = on_bytes or _no_report
    for (a, b), d in zip(ranges, done):
        if d:
            report((b - a) * row_bytes)
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
        report(rb.num_rows * row_bytes)
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


def _no_report(nbytes):
    pass
