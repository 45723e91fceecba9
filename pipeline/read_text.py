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
as with ``--no-id``. Invalid UTF-8 becomes U+FFFD, counted in ``replaced`` as for JSONL.
"""
import pyarrow as pa

from corpustok._arrow import decode_replacing, string_array, utf8_batch
from corpustok.schemas import ID_KINDS

from corpustok.pipeline import files
from corpustok.pipeline.compression import DECODE_ERRORS
from corpustok.pipeline.config import TXT_DOCS
from corpustok.pipeline.documents import DocBatch, documents


class ReadFailure(Exception):
    """An input file stopped being readable part way."""


def line_ranges(source, shard_bytes, shard_rows, paragraphs=False):
    """Yield ``(start, stop, [(row, raw), ...])``: the non-blank lines of ``[start, stop)``
    with their line numbers, or with ``paragraphs`` each paragraph's lines joined, numbered
    by its first line. On a read failure what was read so far is yielded first, then
    ReadFailure is raised."""
    items, para = [], []
    size = start = no = first = 0
    try:
        with files.open_lines(source) as f:
            for raw in f:
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
                    items, size, start = [], 0, no
    except DECODE_ERRORS as e:
        if para:
            items.append((first, b"".join(para)))
        if items:
            yield start, no, items
        raise ReadFailure(f"unreadable after line {no}: {type(e).__name__}: {e}") from e
    if para:
        items.append((first, b"".join(para)))
    if start < no:
        yield start, no, items


def _text_table(items, id_type):
    """DOCUMENTS of ``(row, raw)`` items: null ids, the text without its last line break."""
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
    return documents(pa.nulls(len(rows), ID_KINDS[id_type]),
                     string_array(tb.offsets, tb.data, tb.valid), rows, replaced, id_type)


def read_text(source, shard_bytes, shard_rows, txt_docs="line", is_done=None,
              id_type="string"):
    """Yield ``DocBatch`` ranges of a text file (documents per ``txt_docs``), ranges
    ``is_done(source, start, stop)`` says are complete as ``(start, stop)``. A truncated or
    corrupt file yields what it could read, then raises ReadFailure."""
    if txt_docs not in TXT_DOCS:
        raise ValueError(f"txt_docs must be one of {', '.join(TXT_DOCS)}, got {txt_docs!r}")
    for start, stop, items in line_ranges(source, shard_bytes, shard_rows,
                                          txt_docs == "paragraph"):
        if is_done and is_done(source, start, stop):
            yield (start, stop)
            continue
        yield DocBatch(source, start, stop, _text_table(items, id_type), has_ids=False)
