"""Tokenizing one ``DocBatch`` into a token table: one kernel call per batch.

Rows are rejected (null or empty text) or kept; kept rows carry their tokens (optionally with
BOS/EOS ids around them), counts, byte length, U+FFFD replacements and origin. Documents
longer than ``max_doc_bytes`` go through the tokenizer's ``stream()`` in bounded slices
instead of the batch call, so one 100 MB document cannot blow up the batch's buffers; the
stream gives the same ids as a whole-text encode by the tokenizer protocol.
"""
import hashlib
import os
import threading
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import corpustok
from corpustok.arrow import (decode_replacing, list_array, one_array, pool_array, read_only,
                             utf8_batch)
from corpustok.kernels.markers import add_markers, marked_size
from corpustok.schemas import DOCUMENTS, REJECTS, TOKENS, with_id_type

from corpustok.pipeline import files
from corpustok.pipeline.batches import DocBatch, TokenBatch

DEFAULT_MAX_DOC_BYTES = 8 << 20
STREAM_SLICE_BYTES = 1 << 20


@dataclass(frozen=True)
class TokenizerFiles:
    """A tokenizer given by a folder, by ``vocab.json`` + ``merges.txt``, with a
    pre-tokenizer or a vocab.txt casing (CLI ``--merges``, ``--pretokenizer``,
    ``--lowercase``): a picklable factory, so a job's identity is the hash of the tokenizer it
    builds (``to_dict()``), which every option enters."""

    path: str
    merges: Optional[str] = None
    pretokenizer: Optional[str] = None
    lowercase: Optional[bool] = None

    def __call__(self):
        opts = {"pretokenizer": self.pretokenizer, "lowercase": self.lowercase}
        with files.local_copy(self.path) as path:
            if self.merges is None:
                return corpustok.load(path, **opts)
            with files.local_copy(self.merges) as merges:
                return corpustok.load(path, merges=merges, **opts)


@dataclass(frozen=True)
class TokenizerObject:
    """A tokenizer given as an object (the Python API): a picklable factory that rebuilds it
    from its ``to_dict()`` in each worker, so a job's identity is the hash of that dict."""

    cls: type
    doc: dict

    @classmethod
    def of(cls, tok):
        return cls(type(tok), tok.to_dict())

    def __call__(self):
        return self.cls.from_dict(self.doc)

    def __hash__(self):
        return id(self)


def tokenizer_spec(tokenizer):
    """What the pipeline loads for ``tokenizer`` as the Python API takes it: a path (a file
    as is; a folder through :class:`TokenizerFiles`), a factory, or a tokenizer object (one
    with ``to_dict``/``from_dict``: through :class:`TokenizerObject`)."""
    if isinstance(tokenizer, os.PathLike):
        tokenizer = os.fspath(tokenizer)
    if isinstance(tokenizer, str):  # a local folder (a remote one is read as a file)
        local_folder = not files.is_remote(tokenizer) and os.path.isdir(tokenizer)
        return TokenizerFiles(tokenizer) if local_folder else tokenizer
    if hasattr(tokenizer, "to_dict") and hasattr(type(tokenizer), "from_dict"):
        return TokenizerObject.of(tokenizer)
    if callable(tokenizer):
        return tokenizer
    raise TypeError(f"tokenizer: a tokenizer file or folder, a corpustok tokenizer object or "
                    f"a factory returning one, got {type(tokenizer).__name__}")


def load_tokenizer(spec):
    """A tokenizer from ``spec``: a file path, local or remote (``corpustok.load``), or a
    zero-argument factory such as :class:`TokenizerFiles`."""
    if callable(spec):
        return spec()
    with files.local_copy(spec) as path:
        return corpustok.load(path)


_KEPT = {}  # this process's tokenizers by identity, newest last (at most KEPT_TOKENIZERS)
_KEPT_LOCK = threading.Lock()
KEPT_TOKENIZERS = 2


def kept_tokenizer(spec, identity):
    """:func:`load_tokenizer` once per process for each tokenizer ``identity`` (its sha256,
    as a job names it), then the same object: a runner that sets its DoFns up for every work
    item (Beam's DaskRunner does, per partition) would otherwise load the tokenizer for every
    shard and start each with cold chunk caches (the caches are per thread, so threads may
    share the object)."""
    with _KEPT_LOCK:
        tok = _KEPT.pop(identity, None)
        _keep(identity, load_tokenizer(spec) if tok is None else tok)
        return _KEPT[identity]


def keep_tokenizer(identity, tok):
    """Make ``tok`` the one :func:`kept_tokenizer` gives for ``identity`` in this process: the
    job loads its tokenizer once to name it, and workers running in this process (threads,
    the default) then use that object instead of loading the file again (0.6 s for GPT-2's
    files, seconds for a 200K rank file)."""
    with _KEPT_LOCK:
        _KEPT.pop(identity, None)
        _keep(identity, tok)


def _keep(identity, tok):
    """``tok`` as the newest of :data:`_KEPT` (the oldest dropped past KEPT_TOKENIZERS); the
    caller holds the lock and has popped ``identity``."""
    _KEPT[identity] = tok
    while len(_KEPT) > KEPT_TOKENIZERS:
        _KEPT.pop(next(iter(_KEPT)))


def _stream_encode(tok, data: np.ndarray):
    """Ids of one long UTF-8 document fed to ``tok.stream()`` in slices cut at character
    starts, and the U+FFFD replacements made for invalid UTF-8. Memory: one slice + the ids."""
    enc = tok.stream()
    parts = []
    replaced = 0
    n = len(data)
    i = 0
    while i < n:
        j = min(n, i + STREAM_SLICE_BYTES)
        while j < n and (int(data[j]) & 0xC0) == 0x80 and j > i + 1:  # not inside a character
            j -= 1
        text, bad = decode_replacing(data[i:j].tobytes())
        replaced += bad
        parts.append(np.asarray(enc.feed(text), np.int32))
        i = j
    parts.append(np.asarray(enc.finish(), np.int32))
    return np.concatenate(parts), replaced


def _add_markers(ids, offsets, bos, eos):
    """Insert ``bos``/``eos`` (None: none) around every document: one kernel call."""
    if bos is None and eos is None:
        return ids, offsets
    bos, eos = np.int64(-1 if bos is None else bos), np.int64(-1 if eos is None else eos)
    out = pool_array(marked_size(offsets[-1], len(offsets) - 1, bos, eos))
    return add_markers(read_only(np.asarray(ids, np.int32)), read_only(offsets), bos, eos, out)


def encode_documents(tok, texts: pa.Array, max_doc_bytes=DEFAULT_MAX_DOC_BYTES, threads=1):
    """``(ids, offsets, replaced, nbytes, batch)`` for an Arrow text array: one batch call
    (on ``threads`` threads), plus a bounded stream per document longer than
    ``max_doc_bytes``; ``batch`` is the texts' ``Utf8Batch`` view (reused for the input
    checksum). A tokenizer factory's object need not know ``threads`` when it is 1."""
    kw = {} if threads == 1 else {"threads": threads}
    batch = utf8_batch(texts)
    nbytes = np.diff(batch.offsets)
    huge = np.flatnonzero(nbytes > max_doc_bytes)
    if len(huge):
        blank = np.zeros(len(nbytes), bool)
        blank[huge] = True
        kept = utf8_batch(pc.if_else(pa.array(blank), pa.scalar(b"" if batch.binary else "",
                                                                texts.type), texts))
        ids, offsets, replaced = tok.encode_arrays(kept, **kw)
    else:
        ids, offsets, replaced = tok.encode_arrays(batch, **kw)
    ids = np.asarray(ids, np.int32)
    offsets = np.asarray(offsets, np.int64)
    replaced = np.array(replaced, np.int64)
    if len(huge):
        counts = np.diff(offsets)
        pieces = {}
        for d in huge:  # few documents; each is one bounded stream
            doc = batch.data[batch.offsets[d]:batch.offsets[d + 1]]
            pieces[d], replaced[d] = _stream_encode(tok, doc)
            counts[d] = len(pieces[d])
        new_offsets = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=new_offsets[1:])
        out = pool_array(new_offsets[-1])
        prev = 0
        for d in [*huge, len(counts)]:  # the documents between two long ones, one slice
            out[new_offsets[prev]:new_offsets[d]] = ids[offsets[prev]:offsets[d]]
            prev = d + 1  # a blanked long document has no ids in ``ids``
        for d, p in pieces.items():
            out[new_offsets[d]:new_offsets[d + 1]] = p
        ids, offsets = out, new_offsets
    return ids, offsets, replaced, nbytes, batch


# ``</s>``: an added token of many tokenizer.json files, whose text segments are gathered
WARM_UP_TEXTS = ["Kernels compile on first use: 1 2 3, ÅÄÖ éè, Ελληνικά, кириллица, 漢字かな, "
                 "한국어, हिन्दी, ไทย, 😀👍🏽 \t\n  end</s>", "a second, longer document to stream " * 8]
COMPILE_NOTICE_AFTER = 3.0  # seconds of warm-up after which it is compiling (a cached load: ~1 s)


def warm_up(tok, threads=1, notice=None):
    """Run ``tok`` once on two small documents through the job's own path (a batch call,
    and a bounded stream for a document past the long-document limit), so that the kernels
    it uses compile here, once, before the job starts: in this process for its threads, and
    into Numba's cache for worker processes. Returns the seconds it took. ``notice(seconds)``
    is called once the warm-up has taken :data:`COMPILE_NOTICE_AFTER` (the kernels are
    compiling: the first run of this tokenizer family on this machine), from another
    thread."""
    done = threading.Event()
    if notice is not None:
        watcher = threading.Thread(
            target=lambda: done.wait(COMPILE_NOTICE_AFTER) or notice(COMPILE_NOTICE_AFTER),
            daemon=True)
        watcher.start()
    t0 = time.perf_counter()
    try:
        ids, offsets, *_ = encode_documents(tok, pa.array(WARM_UP_TEXTS, pa.string()),
                                            max_doc_bytes=len(WARM_UP_TEXTS[0].encode()),
                                            threads=threads)
        _add_markers(ids, offsets, 0, 0)  # the BOS/EOS kernel (one signature for all values)
    finally:
        done.set()
    return time.perf_counter() - t0


def input_checksum(ids: pa.Array, texts) -> str:
    """sha256 of a batch's ids (strings or integers) and texts (a ``Utf8Batch`` view;
    lengths included), identifying its input rows."""
    h = hashlib.sha256()
    views = [texts]
    if pa.types.is_integer(ids.type):
        h.update(ids.fill_null(0).to_numpy().astype("<i8").tobytes())
        h.update(np.packbits(ids.is_valid().to_numpy(zero_copy_only=False)).tobytes())
    else:
        views.insert(0, utf8_batch(ids))
    for b in views:
        h.update(np.diff(b.offsets).astype("<i8").tobytes())
        h.update(b.data[b.offsets[0]:b.offsets[-1]])  # buffer protocol, no copy
        if b.valid is not None:
            h.update(np.packbits(b.valid).tobytes())
    return h.hexdigest()


def tokenize_batch(tok, batch: DocBatch, bos=None, eos=None,
                   max_doc_bytes=DEFAULT_MAX_DOC_BYTES, threads=1, name=None) -> TokenBatch:
    """Tokenize one ``DocBatch`` (the kernel on ``threads`` threads); null/empty texts and
    null ids (when the input has ids) become rejects (with the reader's own). ``name``: what
    the rows' ``source`` column says (default: the input's shown canonical name)."""
    name = files.shown(batch.source) if name is None else name
    t = batch.table
    n = t.num_rows
    texts = one_array(t.column("text"))
    ids, offsets, replaced, nbytes, text_batch = encode_documents(tok, texts, max_doc_bytes,
                                                                   threads)
    valid = text_batch.valid
    replaced = replaced + t.column("replaced").to_numpy()
    null = np.zeros(n, bool) if valid is None else ~valid
    no_id = np.zeros(n, bool) if not batch.has_ids else \
        t.column("id").is_null().to_numpy(zero_copy_only=False) & ~null
    empty = (nbytes == 0) & ~null & ~no_id
    keep = ~(null | empty | no_id)
    ids, offsets = _add_markers(ids, offsets, bos, eos)
    tokens = list_array(offsets, ids)
    id_type = t.schema.field("id").type  # the job's, as read
    schema = with_id_type(TOKENS, id_type)
    if not pa.types.is_list(tokens.type):
        schema = schema.set(1, pa.field("tokens", tokens.type, nullable=False))
    rejects_schema = with_id_type(REJECTS, id_type)
    source = pc.take(pa.array([name], pa.string()), pa.array(np.zeros(n, np.int32)))
    table = pa.Table.from_arrays([t.column("id"), tokens, pa.array(np.diff(offsets)),
                                  pa.array(nbytes), pa.array(replaced), source, t.column("row")],
                                 schema=schema)
    for name in t.schema.names[len(DOCUMENTS):]:  # the kept columns, after TOKENS' own
        table = table.append_column(t.schema.field(name), t.column(name))
    rejects = batch.rejects.cast(rejects_schema)
    if rejects.num_rows:
        at = rejects.schema.get_field_index("source")
        rejects = rejects.set_column(at, rejects.schema.field(at),
                                     pa.array([name] * rejects.num_rows, pa.string()))
    if not keep.all():
        drop = ~keep
        reason = np.where(null[drop], "null_text",
                          np.where(no_id[drop], "bad_record", "empty_text"))
        detail = np.where(no_id[drop], "null id", None)
        rejects = pa.concat_tables([rejects, pa.table({
            "id": t.column("id").filter(pa.array(drop)),
            "source": source.filter(pa.array(drop)),
            "row": t.column("row").filter(pa.array(drop)),
            "reason": pa.array(reason, pa.string()),
            "detail": pa.array(detail, pa.string())}, schema=rejects_schema)])
        rejects = rejects.sort_by("row")
        table = table.filter(pa.array(keep))
    return TokenBatch(batch.source, batch.start, batch.stop, table, rejects,
                      input_checksum(one_array(t.column("id")), text_batch), name)
