"""Training-ready exports of a finished shard folder: a flat token stream plus document
boundaries, in the layouts training stacks read, published whole or not at all.

Layouts. Every token file is the ids alone, little-endian, without a header: read it with
``np.memmap(path, dtype, mode="r")`` (``dtype`` from ``PREFIX.export.json``), never with
``np.load``.

- ``megatron``: ``PREFIX.bin`` + ``PREFIX.idx`` as Megatron-Core's ``IndexedDatasetBuilder``
  writes them: the ``.idx`` is the header ``MMIDIDX\\x00\\x00``, version 1 (``<Q``), the dtype
  code (``<B``: 8 uint16, 4 int32), the sequence count and the document count (``<Q`` each),
  then int32 sequence lengths, int64 byte pointers and int64 document indices (``0, 1, ...,
  n``: one sequence a document).
- ``datatrove``: ``PREFIX.ds`` + ``PREFIX.ds.index`` (uint64 document ends, in tokens) +
  ``PREFIX.ds.metadata`` (``NAME|TOKEN_BYTES``, then the token count, as datatrove writes it;
  ``NAME`` is the tokenizer's name from the run manifest).
- ``numpy``: dolma's layout, read by OLMo-core: ``PREFIX.npy``, a raw memmap (not an ``.npy``
  file in numpy's sense: OLMo-core memory-maps it without a header and finds the index by
  replacing ``.npy`` with ``.csv.gz``; see docs/decisions/0001-numpy-export-stays-raw.md), +
  ``PREFIX.csv.gz``, a row ``start,end,id,source,row`` per document (token offsets, no header
  line; ``source`` as the shards' ``source`` column holds it), gzipped with no file name and
  time in its header, so that two exports of one folder are byte-identical.

The id type follows the tokenizer's vocabulary (the run manifest's ``tokenizer.vocab_size``,
or ``vocab_size`` when given), never the ids present: one tokenizer gives one type in every
export, as datatrove and OLMo readers, which take one dtype for a whole mixture, need.
Megatron: uint16 below 65,500 ids, else int32 (Megatron-Core's ``DType.optimal_dtype``);
datatrove and numpy: uint16 up to 65,536 ids, else uint32. An id not below the vocabulary is
refused.

``PREFIX.export.json``, the export manifest: ``layout``, ``files``, ``dtype``, ``raw_memmap``
(true: the token file has no header), ``vocab_size`` (the one the type was chosen for) and
``vocab_size_from`` (``tokenizer`` or ``--vocab-size``), ``tokenizer`` (``name``,
``vocab_size``, ``sha256``), ``documents``, ``tokens``, ``seed``, the run's ``config``, the
source ``shards`` with their sha256, and the size and sha256 of each file it wrote
(``file_bytes``, ``file_sha256``: what ``corpustok verify PREFIX`` checks).

Checks. Only a COMPLETED run manifest of version 2 is exported (version 1, of an earlier
corpustok, has no shard checksums: the run is redone with ``--overwrite``). Each shard's size
and sha256 are checked against its entry, the sha256 over the very bytes that are then parsed;
a mismatch refuses the export, naming the file, and nothing is published. A prefix in a shard
folder (one holding ``.corpustok/``) or below one is refused: that folder's readers
(``pyarrow.dataset``, Hugging Face ``datasets``) would take the export's files for its own.
Files at the targets are replaced only when an earlier export of the same layout wrote them.

Exclusion. The shard folder's run lock is held for the whole export (``output.layout.FolderHold``):
a tokenize run refuses to start in the folder meanwhile, and an export refuses while one runs.
The prefix has a lock of its own, ``.BASENAME.export.lock`` beside the targets (a ``flock``;
the holder's pid, host, start time and tag), so two exports to one prefix never interleave;
the kernel drops a flock when its process dies, so a free lock means its last holder is dead.

Publishing, as a kill at any moment sees it. Every file is written under a temporary name
carrying the export's tag (``files.temp_prefix("export-" + tag)`` + the target's name +
``.part``: hidden, and matched by no ``*.ds`` or ``*.npy`` glob of a reader; the shuffle's
buckets in a folder named like the first temporary + ``.buckets``) and fsynced. Then
``PREFIX.export.journal``, listing the (temporary, target) pairs and the sizes, is written to
a temporary, fsynced and renamed, and the folder fsynced: the commit point. Then the old
``PREFIX.export.json`` is removed (corpustok's readers need it, so none reads a half-published
export), the data files are renamed onto their targets, the new ``PREFIX.export.json`` last,
the folder is fsynced and the journal removed. Before the journal exists the old export is
untouched; once it exists, the prefix holds the new export after recovery.

Recovery. An export takes the prefix lock before anything else; a journal found then (its
writer is dead) is rolled forward, its renames completed, and the temporaries carrying the
dead export's tag (named in the stale lock or in the journal) are removed. :func:`recover`
does the same alone (for ``corpustok verify PREFIX``); while a journal exists, a reader
should call it first (``PackedSequences`` refuses). Nothing else is ever deleted: a file whose
name does not carry a dead export's tag stays.

Shards are read one at a time, in the run manifest's order, rows in order; with a ``seed``
documents are shuffled exactly uniformly in bounded memory (Rao-Sandelius: each document goes
to one of ``k`` temporary buckets at random, then each bucket is permuted in memory and
written out; ``k`` keeps a bucket near :data:`BUCKET_BYTES` of ids). Memory: one shard, or
twice a bucket, plus 20 bytes a document for the index. Outputs are local files (their
readers memory-map them).
"""
import csv
import errno
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import socket
import struct
import time
import uuid
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from corpustok.arrow import id_lists
from corpustok.packed import reorder

from corpustok.pipeline import files
from corpustok.pipeline.config import EXPORT_FORMATS
from corpustok.pipeline.files import cleanup
from corpustok.pipeline.files.held import Busy, HeldFile
from corpustok.pipeline.output.layout import (META_DIR, RUN_MANIFEST, FolderHold, OutputInUse,
                                              json_object, read_run_manifest)

FORMATS = EXPORT_FORMATS
EXPORT_FORMAT = "corpustok-export"
EXPORT_VERSION = 2
RUN_MANIFEST_VERSION = 2  # the run manifests an export reads (version 1 has no checksums)
JOURNAL_FORMAT = "corpustok-export-journal"
MEGATRON_HEADER = b"MMIDIDX\x00\x00"
MEGATRON_CODES = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4}
BUCKET_BYTES = 128 << 20  # exported id bytes per shuffle bucket, about
SUFFIXES = {"megatron": (".bin", ".idx"), "datatrove": (".ds", ".ds.index", ".ds.metadata"),
            "numpy": (".npy", ".csv.gz")}
MANIFEST_SUFFIX = ".export.json"
JOURNAL_SUFFIX = ".export.journal"
LOCK_SUFFIX = ".export.lock"  # the lock is ".BASENAME" + this, beside the targets
TEMP_SUFFIX = ".part"  # a temporary is files.temp_prefix("export-" + tag) + target + this
_TAG = re.compile(r"[0-9a-f]{12}")  # an export's tag, in its temporaries' names
_TARGET_SUFFIXES = {s for group in SUFFIXES.values() for s in group} | {MANIFEST_SUFFIX}

# Called with the name of each step of an export's write and publish (and of a recovery's
# renames), when set: the tests kill an export there.
_STEP_HOOK = None


def _step(name):
    if _STEP_HOOK is not None:
        _STEP_HOOK(name)


class ExportRefused(ValueError):
    """The folder cannot be exported (no completed run of this corpustok, a shard that changed,
    ids outside the vocabulary) or the outputs would replace files this exporter did not
    write, or lie in a shard folder."""


def token_dtype(fmt, cardinality):
    """The id type of format ``fmt`` for a vocabulary of ``cardinality`` ids."""
    if fmt == "megatron":
        return np.dtype(np.uint16 if cardinality < 65500 else np.int32)
    return np.dtype(np.uint16 if cardinality <= 65536 else np.uint32)


def output_files(fmt, prefix):
    """The files an export of format ``fmt`` writes at ``prefix``, its manifest last."""
    return [prefix + s for s in SUFFIXES[fmt]] + [prefix + MANIFEST_SUFFIX]


# ---- what is exported ----------------------------------------------------------------------

def _completed_manifest(folder):
    """The folder's run manifest: a COMPLETED run, written by this corpustok (version 2)."""
    manifest = read_run_manifest(folder)
    where = files.shown(files.join(folder, RUN_MANIFEST))
    if manifest is None:
        raise ExportRefused(f"{where} is missing: the folder holds no finished tokenize run "
                            "(rerun the same `corpustok tokenize` command to finish it)")
    version = manifest.get("version")
    shards = manifest.get("shards")
    if version != RUN_MANIFEST_VERSION or not isinstance(manifest.get("tokenizer"), dict) or \
            not isinstance(shards, list) or \
            not all(isinstance(e, dict) and "sha256" in e for e in shards):
        newer = isinstance(version, int) and version > RUN_MANIFEST_VERSION
        raise ExportRefused(
            f"{where} was written by {'a later' if newer else 'an earlier'} corpustok (run "
            f"manifest version {version}, this one reads {RUN_MANIFEST_VERSION})" +
            ("; export it with that corpustok" if newer else
             ": its shards carry no checksums to export them by; redo the run with "
             "`corpustok tokenize ... --overwrite`"))
    if manifest["status"] != "COMPLETED":
        errors = len(manifest.get("errors", []))
        why = f" ({errors} input(s) unreadable, named there)" if errors else ""
        raise ExportRefused(f"{where}: status {manifest['status']}{why}: export a COMPLETED "
                            "run only")
    return manifest


def _vocabulary(manifest, vocab_size):
    """``(size, whose)``: the vocabulary the id type is chosen for and where it comes from
    (``--vocab-size`` or ``tokenizer``)."""
    if vocab_size is not None:
        return int(vocab_size), "--vocab-size"
    size = manifest["tokenizer"].get("vocab_size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ExportRefused("the run manifest states no vocabulary size for its tokenizer: "
                            "give the export one with --vocab-size N")
    return size, "tokenizer"


def _outside(file, top, vocab, whose):
    said = "--vocab-size" if whose == "--vocab-size" else \
        "the tokenizer's; --vocab-size N exports for a larger one"
    return ExportRefused(f"{file}: token id {top} is not below the vocabulary size {vocab:,} "
                         f"({said})")


def _changed(path, what):
    return ExportRefused(f"{files.shown(path)}: {what}: the shard changed after its run wrote "
                         "it (damaged, or replaced by another file); nothing was exported. "
                         "`corpustok tokenize ... --overwrite` writes the folder anew")


def _check_shards(folder, shards, vocab, whose):
    """Refuse before any work when a shard is missing or not the size its entry says, or its
    entry's largest id is outside the vocabulary."""
    for entry in shards:
        path = files.join(folder, entry["file"])
        try:
            size = files.size(path)
        except FileNotFoundError:
            raise ExportRefused(f"{files.shown(path)} is missing, though the run manifest lists "
                                "it; nothing was exported. `corpustok tokenize ... --overwrite` "
                                "writes the folder anew") from None
        if size != entry["parquet_bytes"]:
            raise _changed(path, f"{size:,} bytes, its entry says {entry['parquet_bytes']:,}")
        if entry.get("max_id", -1) >= vocab:
            raise _outside(entry["file"], entry["max_id"], vocab, whose)


def _shard_docs(folder, entry, vocab, whose):
    """``(ids int32, offsets int64, meta table (id, source, row))`` of one shard, read whole;
    the bytes parsed are the bytes whose size and sha256 are checked against the entry, and
    every id is checked below ``vocab``."""
    path = files.join(folder, entry["file"])
    data = files.read_bytes(path)
    sha = hashlib.sha256(data).hexdigest()
    if len(data) != entry["parquet_bytes"]:
        raise _changed(path, f"{len(data):,} bytes, its entry says {entry['parquet_bytes']:,}")
    if sha != entry["sha256"]:
        raise _changed(path, f"sha256 {sha[:16]}..., its entry says {entry['sha256'][:16]}...")
    table = pq.read_table(pa.BufferReader(data), columns=["tokens", "id", "source", "row"])
    if table.num_rows != entry["documents"]:
        raise ExportRefused(f"{entry['file']}: {table.num_rows} rows, its entry says "
                            f"{entry['documents']}")
    flat, offsets, _ = id_lists(table.column("tokens"), np.int32)
    if len(flat) and int(flat.max()) >= vocab:
        raise _outside(entry["file"], int(flat.max()), vocab, whose)
    return flat, offsets, table.select(["id", "source", "row"])


def _in_order(folder, shards, vocab, whose, sources):
    """``(ids, offsets, meta)`` of the documents in output order, unshuffled: the shards one
    by one; each shard's sha256 and counts go to ``sources``."""
    for entry in shards:
        flat, offsets, meta = _shard_docs(folder, entry, vocab, whose)
        sources.append({"file": entry["file"], "sha256": entry["sha256"],
                        "documents": meta.num_rows, "tokens": len(flat)})
        _step("read")
        yield flat, offsets, meta


def _shuffled(folder, shards, vocab, whose, sources, seed, dtype, work):
    """``(ids, offsets, meta)`` of the documents in a uniformly random order for ``seed``:
    each document to a random bucket (its ids in the export's type, appended to a file in
    ``work``, its metadata to an Arrow stream), then each bucket read and permuted."""
    rng = np.random.Generator(np.random.PCG64(seed))
    total = sum(e["tokens"] for e in shards)
    k = max(1, -(-total * dtype.itemsize // BUCKET_BYTES))
    lengths = [[] for _ in range(k)]
    metas = [None] * k
    try:
        for flat, offsets, meta in _in_order(folder, shards, vocab, whose, sources):
            bucket = rng.integers(0, k, meta.num_rows)
            order = np.argsort(bucket, kind="stable")
            ids, offs = reorder(flat, offsets, order)
            meta = meta.take(pa.array(order))
            d = 0
            for b, n in enumerate(np.bincount(bucket, minlength=k)):
                if n:
                    with open(os.path.join(work, f"{b}.ids"), "ab") as f:
                        f.write(ids[offs[d]:offs[d + n]].astype(dtype).tobytes())
                    lengths[b].append(np.diff(offs[d:d + n + 1]))
                    if metas[b] is None:
                        metas[b] = ipc.new_stream(os.path.join(work, f"{b}.meta"), meta.schema)
                    metas[b].write_table(meta.slice(d, n))
                    d += n
    finally:
        for w in metas:
            if w is not None:
                w.close()
    for b in range(k):
        if metas[b] is None:
            continue
        ids = np.fromfile(os.path.join(work, f"{b}.ids"), dtype)
        with ipc.open_stream(os.path.join(work, f"{b}.meta")) as reader:
            meta = reader.read_all()
        for name in (f"{b}.ids", f"{b}.meta"):
            os.remove(os.path.join(work, name))
        offsets = np.concatenate([[0], np.cumsum(np.concatenate(lengths[b]))])
        perm = rng.permutation(meta.num_rows)
        flat, offs = reorder(ids, offsets, perm)
        _step("bucket")
        yield flat, offs, meta.take(pa.array(perm))


# ---- writing -------------------------------------------------------------------------------

def _sync(f):
    f.flush()
    os.fsync(f.fileno())


def _sync_folder(folder):
    """Make the renames and removals in ``folder`` durable (where its file system can)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP):  # a folder it cannot sync
            raise
    finally:
        os.close(fd)


@contextmanager
def _gzip_rows(path):
    """A binary gzip stream into ``path`` whose header holds no file name and no time (so the
    same rows give the same bytes), fsynced when closed."""
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", compresslevel=6, fileobj=raw,
                           mtime=0) as rows:
            yield rows
        _sync(raw)


@contextmanager
def _no_rows():
    yield None


def _write(fmt, stream, dtype, tokenizer_name, temps):
    """Write the ``(ids, offsets, meta)`` parts of ``stream`` into the format's files at
    ``temps`` (its suffixes' order), each fsynced; returns ``(documents, tokens)``."""
    lengths = []
    docs = ntok = 0
    with open(temps[0], "wb") as data, \
            (_gzip_rows(temps[1]) if fmt == "numpy" else _no_rows()) as rows:
        for flat, offsets, meta in stream:
            data.write(np.ascontiguousarray(flat.astype(dtype.newbyteorder("<"), copy=False)))
            lengths.append(np.diff(offsets))
            if rows is not None:
                ids, src, row = (meta.column(c).to_pylist() for c in ("id", "source", "row"))
                starts = (ntok + offsets).tolist()
                rows.write(_csv_rows(zip(starts, starts[1:], ids, src, row)).encode("utf-8"))
            docs += meta.num_rows
            ntok += len(flat)
        _sync(data)
    lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    if fmt == "megatron":
        with open(temps[1], "wb") as f:
            f.write(MEGATRON_HEADER + struct.pack("<Q", 1) +
                    struct.pack("<B", MEGATRON_CODES[dtype]) +
                    struct.pack("<Q", len(lengths)) + struct.pack("<Q", len(lengths) + 1))
            f.write(lengths.astype("<i4").tobytes())
            pointers = np.zeros(len(lengths), "<i8")
            np.cumsum(lengths[:-1] * dtype.itemsize, out=pointers[1:])
            f.write(pointers.tobytes())
            f.write(np.arange(len(lengths) + 1, dtype="<i8").tobytes())
            _sync(f)
    elif fmt == "datatrove":
        with open(temps[1], "wb") as f:
            f.write(np.cumsum(lengths, dtype=np.uint64).astype("<u8").tobytes())
            _sync(f)
        with open(temps[2], "w", encoding="utf-8") as f:
            f.write(f"{_metadata_name(tokenizer_name)}|{dtype.itemsize}\n{ntok}\n")
            _sync(f)
    return docs, ntok


def _metadata_name(name):
    """The tokenizer's name as one field of datatrove's ``NAME|TOKEN_BYTES`` line."""
    return re.sub(r"[|\r\n]", "_", str(name))


def _csv_rows(rows):
    """Lines of the numpy layout's index, ``start,end,id,source,row`` each, by the csv module
    (ids and sources may hold commas, quotes or line breaks; None is an empty field)."""
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    return text.getvalue()


# ---- the prefix: lock, temporaries, journal ------------------------------------------------

def _temp_path(target, tag):
    """Where export ``tag`` writes ``target`` first: beside it, named with the tag, and not
    ending as the target does (a reader's ``*.ds`` or ``*.npy`` glob must not match it)."""
    folder, name = os.path.split(target)
    return os.path.join(folder, files.temp_prefix("export-" + tag) + name + TEMP_SUFFIX)


def _remove_tagged(prefix, tag):
    """Remove the temporaries (files and the buckets folder) of export ``tag`` at ``prefix``:
    the names that start with its temporary prefix and the prefix's name, nothing else."""
    folder, base = os.path.split(prefix)
    start = files.temp_prefix("export-" + tag) + base
    for name in os.listdir(folder):
        if name.startswith(start):
            path = os.path.join(folder, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.remove(path)
                except FileNotFoundError:
                    pass


def _write_journal(prefix, tag, pairs, sizes):
    """The commit point: ``PREFIX.export.journal`` listing the renames ``pairs`` (temporary,
    target; the export manifest last) and the targets' ``sizes``, written whole and made
    durable."""
    folder = os.path.dirname(prefix)
    path = prefix + JOURNAL_SUFFIX
    journal = {"format": JOURNAL_FORMAT, "version": 1, "tag": tag,
               "renames": [[os.path.basename(t), os.path.basename(g)] for t, g in pairs],
               "sizes": {os.path.basename(g): n for g, n in sizes.items()}}
    tmp = _temp_path(path, tag)
    cleanup.register(tmp)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(journal, indent=1, ensure_ascii=False) + "\n")
        _sync(f)
    _step("journal written")
    os.replace(tmp, path)
    cleanup.release(tmp, keep=True)
    _sync_folder(folder)
    _step("committed")


def _read_journal(prefix):
    """``(tag, pairs, sizes)`` of the journal at ``prefix`` (paths), or None when there is
    none; ExportRefused for a journal this exporter did not write (its renames are done only
    when every name carries its tag and every target is an export file of this prefix)."""
    path = prefix + JOURNAL_SUFFIX
    try:
        with open(path, "rb") as f:
            journal = json_object(f.read())
    except FileNotFoundError:
        return None
    folder, base = os.path.split(prefix)
    try:
        tag = journal["tag"]
        pairs = [(t, g) for t, g in journal["renames"]]
        sizes = {g: int(n) for g, n in journal["sizes"].items()}
        ok = journal["format"] == JOURNAL_FORMAT and _TAG.fullmatch(tag) and pairs and \
            pairs[-1][1] == base + MANIFEST_SUFFIX and all(
                g.startswith(base) and g[len(base):] in _TARGET_SUFFIXES and g in sizes and
                t == files.temp_prefix("export-" + tag) + g + TEMP_SUFFIX for t, g in pairs)
    except (TypeError, KeyError, ValueError, AttributeError):
        ok = False
    if not ok:
        raise ExportRefused(f"{path} is not the journal of a corpustok export to {prefix}: "
                            "remove it, then export again")
    return (tag, [(os.path.join(folder, t), os.path.join(folder, g)) for t, g in pairs],
            {os.path.join(folder, g): n for g, n in sizes.items()})


def _publish(prefix, pairs, sizes):
    """Carry out a journal's renames: the old export manifest removed, the files renamed onto
    their targets, the new manifest last; then the journal removed. Idempotent: what a kill
    left undone, the next call does (a rename done has no temporary left)."""
    folder = os.path.dirname(prefix)
    manifest_tmp, manifest = pairs[-1]
    if os.path.lexists(manifest_tmp):
        try:
            os.remove(manifest)
        except FileNotFoundError:
            pass
        _sync_folder(folder)
        _step("old manifest removed")
    for tmp, target in pairs:
        if os.path.lexists(tmp):
            os.replace(tmp, target)
            _step("renamed " + os.path.basename(target))
    _sync_folder(folder)
    wrong = [t for t, n in sizes.items() if not os.path.isfile(t) or os.path.getsize(t) != n]
    if wrong:  # a temporary deleted by hand: the journal stays, readers keep refusing
        raise ExportRefused(f"cannot complete the export journaled in {prefix}{JOURNAL_SUFFIX}: "
                            f"{wrong[0]} is missing or not the size the journal lists; remove "
                            "the journal and the export's files, then export again")
    os.remove(prefix + JOURNAL_SUFFIX)
    _sync_folder(folder)
    _step("journal removed")


def _recover(prefix, stale):
    """With the prefix lock just taken, so that whoever held it before is dead: roll a journal
    forward, then remove the temporaries of the dead exports named by the stale lock content
    ``stale`` and by the journal. Returns True when a journal was rolled forward."""
    tags = set()
    if stale and isinstance(stale.get("tag"), str) and _TAG.fullmatch(stale["tag"]):
        tags.add(stale["tag"])
    journal = _read_journal(prefix)
    if journal is not None:
        tag, pairs, sizes = journal
        tags.add(tag)
        _publish(prefix, pairs, sizes)
    for tag in sorted(tags):
        _remove_tagged(prefix, tag)
    return journal is not None


class _PrefixLock:
    """An export's hold on its prefix (a context manager): an exclusive ``flock`` on
    ``.BASENAME.export.lock`` beside the targets, whose content names the holder and its tag
    (:attr:`tag`, in the names of its temporaries). Taking it over from a dead export first
    finishes that export's business (:func:`_recover`; :attr:`recovered`), and only then writes
    this holder's content, so a kill during recovery leaves the proof for the next one. A
    second holder while one lives is refused (:class:`~output.layout.OutputInUse`)."""

    def __init__(self, prefix):
        folder, base = os.path.split(prefix)
        self.prefix = prefix
        self.tag = uuid.uuid4().hex[:12]
        self.recovered = False
        self.file = HeldFile(os.path.join(folder, f".{base}{LOCK_SUFFIX}"))

    def __enter__(self):
        try:
            previous = self.file.take()
        except Busy as busy:
            holder = json_object(busy.record) or {}
            started = time.strftime("%Y-%m-%d %H:%M:%S",
                                    time.localtime(holder.get("started", 0)))
            raise OutputInUse(f"{self.prefix}: another corpustok export to this prefix is "
                              f"running (pid {holder.get('pid')} on {holder.get('host')}, "
                              f"started {started}); wait for it to end or choose another "
                              "--out") from None
        try:
            self.recovered = _recover(self.prefix, json_object(previous))
            me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time(),
                  "tag": self.tag}
            self.file.write(json.dumps(me).encode())
        except BaseException:
            self.file.release(keep=True)  # the stale content stays: the next holder recovers
            raise
        return self

    def __exit__(self, *exc):
        if self.file.fd is None:
            return
        if not os.path.lexists(self.prefix + JOURNAL_SUFFIX):
            _remove_tagged(self.prefix, self.tag)  # else the next holder rolls it forward
        self.file.release()


def recover(prefix):
    """Complete an export to ``prefix`` killed after its commit point (roll its journal
    forward) and remove the temporaries of dead exports to it, as every export does first;
    returns True when an export was completed. For ``corpustok verify PREFIX`` and readers
    that find ``PREFIX.export.journal``. OutputInUse while an export to the prefix runs."""
    prefix = os.path.abspath(prefix)
    lock = _PrefixLock(prefix)
    if not os.path.lexists(lock.file.path) and not os.path.lexists(prefix + JOURNAL_SUFFIX):
        return False  # no export was killed here: nothing to take
    with lock:
        return lock.recovered


# ---- the export ----------------------------------------------------------------------------

def _check_prefix(folder, prefix):
    """Refuse a prefix in a folder that does not exist, or in a shard folder (the exported
    one, or any folder holding ``.corpustok/``) or below one."""
    where = os.path.dirname(prefix)
    if not os.path.isdir(where):
        raise ValueError(f"--out {prefix}: the folder {where} does not exist")
    shards = None if files.is_remote(folder) else os.path.realpath(folder)
    at = os.path.realpath(where)
    while True:
        if at == shards or os.path.isdir(os.path.join(at, META_DIR)):
            raise ExportRefused(f"--out {prefix} is inside the shard folder {at} (it holds "
                                f"{META_DIR}/): its readers (pyarrow.dataset, datasets) would "
                                "take the export's files for its own; choose --out outside it")
        up = os.path.dirname(at)
        if up == at:
            return
        at = up


def _check_targets(fmt, prefix):
    """Refuse to replace files unless an earlier export of the same layout wrote them."""
    targets = output_files(fmt, prefix)
    present = [t for t in targets if os.path.lexists(t)]
    if not present:
        return
    try:
        with open(prefix + MANIFEST_SUFFIX, encoding="utf-8") as f:
            previous = json.load(f)
        ours = previous.get("format") == EXPORT_FORMAT and \
            set(previous.get("files", [])) >= {os.path.basename(t) for t in targets[:-1]}
    except (OSError, ValueError, AttributeError, TypeError):
        ours = False
    if not ours:
        raise ExportRefused(f"{present[0]} exists and is not an export of this layout by "
                            "corpustok: remove it or choose another --out")


def export(folder, fmt, prefix, *, seed=None, vocab_size=None):
    """Export the shard folder ``folder`` (a COMPLETED run) as format ``fmt`` (one of
    :data:`FORMATS`) at the local path ``prefix``; returns the export manifest. ``seed``:
    shuffle the documents (same seed, same order); ``vocab_size``: the vocabulary the id type
    is chosen for (default: the tokenizer's). Raises :class:`ExportRefused` (a ValueError)
    for a folder without a completed run of this corpustok, a shard that changed, ids outside
    the vocabulary or outputs that are not ours, and ``output.layout.OutputInUse`` (a ValueError)
    while a tokenize run holds the folder or another export the prefix."""
    if fmt not in FORMATS:
        raise ValueError(f"export format {fmt!r}: one of {', '.join(FORMATS)}")
    if files.is_remote(prefix):
        raise ValueError(f"--out {prefix}: exports are written to local files (their readers "
                         "memory-map them); copy them to the object store afterwards")
    if prefix.endswith(("/", os.sep)):
        raise ValueError(f"--out {prefix}: a path prefix of the files to write (such as "
                         "exports/part), not a folder")
    prefix = os.path.abspath(prefix)
    _check_prefix(folder, prefix)
    with _PrefixLock(prefix) as lock, FolderHold(folder, "export"):
        manifest = _completed_manifest(folder)
        _check_targets(fmt, prefix)
        return _export_held(folder, manifest, fmt, prefix, lock.tag, seed, vocab_size)


def _export_held(folder, manifest, fmt, prefix, tag, seed, vocab_size):
    """:func:`export` with the folder and the prefix held: write every file under its
    temporary name, then commit and publish."""
    shards = manifest["shards"]
    vocab, whose = _vocabulary(manifest, vocab_size)
    _check_shards(folder, shards, vocab, whose)
    dtype = token_dtype(fmt, vocab)
    targets = output_files(fmt, prefix)
    temps = [_temp_path(t, tag) for t in targets]
    work = temps[0] + ".buckets"  # the shuffle's buckets, emptied as they are read
    for path in temps + [work]:
        cleanup.register(path)  # removed by the interrupt handler until the commit
    sources = []
    try:
        if seed is None:
            stream = _in_order(folder, shards, vocab, whose, sources)
        else:
            os.mkdir(work)
            stream = _shuffled(folder, shards, vocab, whose, sources, seed, dtype, work)
        tokenizer = manifest["tokenizer"]
        name = tokenizer.get("name") or f"corpustok:{tokenizer.get('sha256')}"
        docs, ntok = _write(fmt, stream, dtype, name, temps)
        if docs != manifest["totals"]["documents"] or ntok != manifest["totals"]["tokens"]:
            raise ExportRefused(f"the shards hold {docs} documents and {ntok} tokens, the run "
                                f"manifest says {manifest['totals']['documents']} and "
                                f"{manifest['totals']['tokens']}")
        result = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "layout": fmt,
                  "files": [os.path.basename(t) for t in targets[:-1]],
                  "file_sha256": {os.path.basename(t): files.sha256_of(tmp)
                                  for t, tmp in zip(targets[:-1], temps[:-1])},
                  "file_bytes": {os.path.basename(t): os.path.getsize(tmp)
                                 for t, tmp in zip(targets[:-1], temps[:-1])},
                  "source": files.shown(folder), "documents": docs, "tokens": ntok,
                  "dtype": dtype.name, "raw_memmap": True, "vocab_size": vocab,
                  "vocab_size_from": whose,
                  "tokenizer": {k: tokenizer.get(k) for k in ("name", "vocab_size", "sha256")},
                  "tokenizer_sha256": manifest["tokenizer_sha256"], "seed": seed,
                  "config": manifest["config"], "shards": sources}
        with open(temps[-1], "w", encoding="utf-8") as f:
            f.write(json.dumps(result, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
            _sync(f)
        _step("written")
    finally:
        if os.path.isdir(work):
            shutil.rmtree(work)
        for path in temps + [work]:
            cleanup.release(path, keep=True)  # from here the prefix lock's tag proves them
    pairs = list(zip(temps, targets))
    sizes = {target: os.path.getsize(tmp) for tmp, target in pairs}
    _write_journal(prefix, tag, pairs, sizes)
    _publish(prefix, pairs, sizes)
    return result
