"""Line files cut into shard ranges, and plain-text inputs read as documents.

A JSONL file and a ``.txt`` file are both read sequentially and cut into row ranges by line
count alone (:func:`line_ranges`): a range ends once it holds ``shard_bytes`` of line bytes or
``shard_rows`` documents, so its bounds depend only on the file and the options, and a rerun
or a resumed run cuts the same shards. Rows are 0-based line numbers.

A ``.txt`` input (plain, ``.gz``, ``.xz``, ``.zst``) holds a document per line
(``txt_docs="line"``) or per paragraph, lines separated by one or more blank lines
(``"paragraph"``: a range then ends only after a blank line, so no paragraph is cut).
Blank (whitespace-only) lines are never documents. A document's text is its line(s) without
the final line break; a paragraph keeps the line breaks inside it. Its row is the number of
its (first) line. Text files have no ids: ids are null and rows are known by source and row,
as with ``--no-id``. Invalid UTF-8 becomes U+FFFD, counted in ``replaced`` as for JSONL. A
UTF-8 byte order mark at the start of a text file is not text (JSON's parser skips it).

A file that fails part way (a compressed file found corrupt or truncated, storage that fails)
raises :class:`ReadFailure` after the ranges read so far, saying which lines are in the shards:
those of a compressed file only up to the end of its last member that passed its check
(``compression.verified``); a range that ends past them is the job's to remove.
"""
import itertools

import pyarrow as pa

from corpustok.arrow import decode_replacing, string_array, utf8_batch
from corpustok.schemas import ID_KINDS

from corpustok.pipeline import files
from corpustok.pipeline.batches import DocBatch, documents
from corpustok.pipeline.files.compression import DECODE_ERRORS, Damaged, verified
from corpustok.pipeline.read.errors import ReadFailure
from corpustok.pipeline.read.spec import TXT_DOCS


BOM = b"\xef\xbb\xbf"  # UTF-8's byte order mark


def line_ranges(source, shard_bytes, shard_rows, paragraphs=False, strip_bom=False,
                on_bytes=None):
    """Yield ``(start, stop, [(row, raw), ...])``: the non-blank lines of ``[start, stop)``
    with their line numbers, or with ``paragraphs`` each paragraph's lines joined, numbered
    by its first line; with ``strip_bom`` a UTF-8 byte order mark is cut from the start of
    the file. On a read failure the lines read since the last range are yielded as a last
    range if they are verified (:class:`ReadFailure`), then ReadFailure is raised.
    ``on_bytes(n)``: called with the stored bytes of each read, if given."""
    items, para, stops = [], [], []
    size = start = no = first = 0
    f = None
    try:
        with files.open_lines(source, on_bytes) as f:
            for raw in _lines(f, strip_bom):
                if raw.strip():
                    if paragraphs:
                        first = first if para else no
                        para.append(raw)
                    else:
                        items.append((no, raw))
                    size += len(raw)
                elif para:
                    items.append((first, b"".join(para)))
                    para = []
                no += 1
                if not para and (size >= shard_bytes or len(items) >= shard_rows):
                    yield start, no, items
                    stops.append(no)
                    items, size, start = [], 0, no
    except DECODE_ERRORS as e:
        check = None if f is None else verified(f)
        rows = no if check is None else min(no, check.lines)
        if para:
            items.append((first, b"".join(para)))
        if items and no <= rows:
            yield start, no, items
            stops.append(no)
        kept = max((s for s in stops if s <= rows), default=0)
        raise ReadFailure(_failure_message(e, no, rows, kept, check), rows) from e
    if para:
        items.append((first, b"".join(para)))
    if start < no:
        yield start, no, items


def _lines(f, strip_bom):
    """The lines of ``f``; with ``strip_bom`` a leading UTF-8 byte order mark cut."""
    if not strip_bom:
        return f
    head = f.readline()
    if head.startswith(BOM):
        head = head[len(BOM):]
    return itertools.chain((head,) if head else (), f)


def _failure_message(e, no, rows, kept, check):
    """What a read failure after ``no`` lines leaves: ``rows`` lines verified, ``kept`` of
    them in the shards (those of the ranges that end by then), ``check`` the file's
    ``compression.Verified`` (None: not compressed)."""
    where = f"unreadable after line {no - 1}" if no else "unreadable from its first line"
    cause = str(e) if isinstance(e, Damaged) else f"{type(e).__name__}: {e}"
    held = f"lines 0-{kept - 1} are in the shards" if kept else "no line of it is in the shards"
    return f"{where} ({cause}): {held}{_why(no, rows, kept, check)}; the rest of the file is not"


def _why(no, rows, kept, check):
    """Why the shards hold fewer lines than were read: a compressed file's lines past its
    last verified member."""
    if check is None or rows == no:
        return ""
    if not rows:
        return f" (no {check.unit} of it passed its check)"
    passed = f"its lines 0-{rows - 1} passed the checks of its {check.unit}s"
    if kept == rows:
        return f" ({passed})"
    if kept:
        return f" (the shards that end by line {rows - 1}: {passed})"
    return f" ({passed}, but its first shard reaches past them)"


def _text_table(items, spec):
    """DOCUMENTS of ``(row, raw)`` items: null ids, the text without its last line break, null
    kept columns (a text file has no fields)."""
    texts, rows, replaced = [], [], []
    for row, raw in items:
        raw = raw.rstrip(b"\r\n")
        try:
            text, fixed = raw.decode("utf-8"), 0
        except UnicodeDecodeError:
            text, fixed = decode_replacing(raw)
        texts.append(text)
        rows.append(row)
        replaced.append(fixed)
    tb = utf8_batch(texts)
    n = len(rows)
    return documents(pa.nulls(n, ID_KINDS[spec.id_type]),
                     string_array(tb.offsets, tb.data, tb.valid), rows, replaced, spec.id_type,
                     [(keep, pa.nulls(n, keep.arrow_type)) for keep in spec.keep])


def read_text(source, spec, is_done=None, on_bytes=None):
    """Yield ``DocBatch`` ranges of a text file (documents per ``spec.txt_docs``; sizes,
    id type and kept columns from ``spec``, a ``read.spec.ReadSpec``), ranges
    ``is_done(source, start, stop)`` says are complete as ``(start, stop)``. A truncated or
    corrupt file yields what it could read and verify, then raises ReadFailure.
    ``on_bytes``: as :func:`line_ranges`'s."""
    if spec.txt_docs not in TXT_DOCS:
        raise ValueError(f"txt_docs must be one of {', '.join(TXT_DOCS)}, got "
                         f"{spec.txt_docs!r}")
    for start, stop, items in line_ranges(source, spec.shard_bytes, spec.shard_rows,
                                          spec.txt_docs == "paragraph", strip_bom=True,
                                          on_bytes=on_bytes):
        if is_done and is_done(source, start, stop):
            yield (start, stop)
            continue
        yield DocBatch(source, start, stop, _text_table(items, spec), has_ids=False)
