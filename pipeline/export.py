"""Training-ready exports of a finished shard folder: a flat token stream plus document
boundaries, in the layouts training stacks read.

- ``megatron``: ``PREFIX.bin`` + ``PREFIX.idx`` as Megatron-Core's ``IndexedDatasetBuilder``
  writes them: the ``.idx`` is the header ``MMIDIDX\\x00\\x00``, version 1 (``<Q``), the dtype
  code (``<B``: 8 uint16, 4 int32), the sequence count and the document count (``<Q`` each),
  then int32 sequence lengths, int64 byte pointers and int64 document indices (``0, 1, ...,
  n``: one sequence a document). uint16 when the vocabulary (``vocab_size``, else the largest
  id + 1) is below 65,500, else int32: ``DType.optimal_dtype``'s rule.
- ``datatrove``: ``PREFIX.ds`` (little-endian uint16 when the vocabulary has at most 65,536
  ids, else uint32) + ``PREFIX.ds.index`` (uint64 document ends, in tokens) + ``PREFIX.ds
  .metadata`` (``tokenizer|token bytes`` and the token count, as datatrove writes it).
- ``numpy``: dolma's layout, read by OLMo-core: ``PREFIX.npy``, the ids as a raw memmap without
  a header (uint16 or uint32 as for datatrove), + ``PREFIX.csv.gz``, a row ``start,end,id,
  source,row`` per document (token offsets, no header line).

Shards are read one at a time, in the run manifest's order, rows in order; with a ``seed``
documents are shuffled exactly uniformly in bounded memory (Rao-Sandelius: each document goes
to one of ``k`` temporary buckets at random, then each bucket is permuted in memory and
written out; ``k`` keeps a bucket near :data:`BUCKET_BYTES` of ids). Memory: one shard, or
twice a bucket, plus 20 bytes a document for the index. Every file is written under a
temporary name beside its target and renamed when all are complete, the export manifest
(``PREFIX.export.json``: the source shards with their sha256, documents, tokens, dtype)
last; outputs are local files (their readers memory-map them).
"""
import gzip
import hashlib
import json
import os
import struct
import uuid
from contextlib import nullcontext

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from corpustok._arrow import id_lists
from corpustok.packed import reorder

from corpustok.pipeline import cleanup, files
from corpustok.pipeline.config import EXPORT_FORMATS
from corpustok.pipeline.outdir import RUN_MANIFEST, read_run_manifest

FORMATS = EXPORT_FORMATS
EXPORT_FORMAT = "corpustok-export"
MEGATRON_HEADER = b"MMIDIDX\x00\x00"
MEGATRON_CODES = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4}
BUCKET_BYTES = 128 << 20  # exported id bytes per shuffle bucket, about
SUFFIXES = {"megatron": (".bin", ".idx"), "datatrove": (".ds", ".ds.index", ".ds.metadata"),
            "numpy": (".npy", ".csv.gz")}


class ExportRefused(ValueError):
    """The folder cannot be exported (no completed run) or the outputs would replace files
    this exporter did not write."""


def token_dtype(fmt, cardinality):
    """The id type of format ``fmt`` for a vocabulary of ``cardinality`` ids."""
    if fmt == "megatron":
        return np.dtype(np.uint16 if cardinality < 65500 else np.int32)
    return np.dtype(np.uint16 if cardinality <= 65536 else np.uint32)


def output_files(fmt, prefix):
    """The files an export of format ``fmt`` writes at ``prefix``, its manifest last."""
    return [prefix + s for s in SUFFIXES[fmt]] + [prefix + ".export.json"]


def _completed_manifest(folder):
    manifest = read_run_manifest(folder)
    where = files.shown(files.join(folder, RUN_MANIFEST))
    if manifest is None:
        raise ExportRefused(f"{where} is missing: the folder holds no finished tokenize run "
                            "(rerun the same `corpustok tokenize` command to finish it)")
    if manifest["status"] != "COMPLETED":
        raise ExportRefused(f"{where}: status {manifest['status']} ({len(manifest['errors'])} "
                            "input(s) unreadable, named there): export a COMPLETED run only")
    return manifest


def _check_targets(fmt, prefix):
    """Refuse to replace files unless an earlier export of the same layout wrote them."""
    targets = output_files(fmt, prefix)
    present = [t for t in targets if os.path.exists(t)]
    if not present:
        return
    try:
        with open(prefix + ".export.json", encoding="utf-8") as f:
            previous = json.load(f)
        ours = previous.get("format") == EXPORT_FORMAT and \
            set(previous.get("files", [])) >= {os.path.basename(t) for t in targets[:-1]}
    except (OSError, ValueError, AttributeError):
        ours = False
    if not ours:
        raise ExportRefused(f"{present[0]} exists and is not an export of this layout by "
                            "corpustok: remove it or choose another --out")


def _shard_docs(folder, entry, cardinality):
    """``(ids int32, offsets int64, meta table (id, source, row), sha256)`` of one shard, read
    whole (the file's bytes hashed as read), every id checked below ``cardinality``."""
    data = files.read_bytes(files.join(folder, entry["file"]))
    table = pq.read_table(pa.BufferReader(data), columns=["tokens", "id", "source", "row"])
    if table.num_rows != entry["documents"]:
        raise ExportRefused(f"{entry['file']}: {table.num_rows} rows, its entry says "
                            f"{entry['documents']}")
    flat, offsets, _ = id_lists(table.column("tokens"), np.int32)
    if len(flat) and int(flat.max()) >= cardinality:
        raise ExportRefused(f"{entry['file']}: token id {int(flat.max())} is outside the "
                            f"vocabulary of {cardinality} ids (--vocab-size)")
    return (flat, offsets, table.select(["id", "source", "row"]),
            hashlib.sha256(data).hexdigest())


def _largest_id(folder, shards):
    """The largest id of the shards: from their entries (``max_id``), else by reading them
    (folders written before entries had it)."""
    if all("max_id" in e for e in shards):
        return max((e["max_id"] for e in shards), default=-1)
    top = -1
    for entry in shards:
        table = pq.read_table(files.join(folder, entry["file"]), columns=["tokens"])
        m = pc.max(pc.list_flatten(table.column("tokens"))).as_py()
        top = max(top, -1 if m is None else m)
    return top


def _in_order(folder, shards, cardinality, sources):
    """``(ids, offsets, meta)`` of the documents in output order, unshuffled: the shards one
    by one; each shard's sha256 and counts go to ``sources``."""
    for entry in shards:
        flat, offsets, meta, sha = _shard_docs(folder, entry, cardinality)
        sources.append({"file": entry["file"], "sha256": sha, "documents": meta.num_rows,
                        "tokens": len(flat)})
        yield flat, offsets, meta


def _shuffled(folder, shards, cardinality, sources, seed, dtype, work):
    """``(ids, offsets, meta)`` of the documents in a uniformly random order for ``seed``:
    each document to a random bucket (its ids in the export's type, appended to a file in
    ``work``, its metadata to an Arrow stream), then each bucket read and permuted."""
    rng = np.random.Generator(np.random.PCG64(seed))
    total = sum(e["tokens"] for e in shards)
    k = max(1, -(-total * dtype.itemsize // BUCKET_BYTES))
    lengths = [[] for _ in range(k)]
    metas = [None] * k
    try:
        for flat, offsets, meta in _in_order(folder, shards, cardinality, sources):
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
        yield flat, offs, meta.take(pa.array(perm))


class _Outputs:
    """The temporary files of an export, renamed onto their targets by :meth:`publish`."""

    def __init__(self, targets):
        tag = uuid.uuid4().hex[:12]
        self.targets = targets
        self.temps = [os.path.join(os.path.dirname(t) or ".",
                                   f"{files.temp_prefix('export-' + tag)}{os.path.basename(t)}")
                      for t in targets]
        for t in self.temps:
            cleanup.register(t)

    def publish(self):
        for tmp, target in zip(self.temps, self.targets):
            os.replace(tmp, target)
            cleanup.release(tmp, keep=True)

    def discard(self):
        for tmp in self.temps:
            cleanup.release(tmp)


def _write(fmt, stream, dtype, tokenizer, temps):
    """Write the ``(ids, offsets, meta)`` parts of ``stream`` into the format's files at
    ``temps`` (its suffixes' order); returns ``(documents, tokens)``."""
    lengths = []
    docs = ntok = 0
    with open(temps[0], "wb") as data, \
            (gzip.open(temps[1], "wt", encoding="utf-8", newline="", compresslevel=6)
             if fmt == "numpy" else nullcontext()) as rows:
        for flat, offsets, meta in stream:
            data.write(np.ascontiguousarray(flat.astype(dtype.newbyteorder("<"), copy=False)))
            lengths.append(np.diff(offsets))
            if fmt == "numpy":
                ids, src, row = (meta.column(c).to_pylist() for c in ("id", "source", "row"))
                starts = ntok + offsets
                for d in range(meta.num_rows):
                    rows.write(_csv_row(starts[d], starts[d + 1], ids[d], src[d], row[d]))
            docs += meta.num_rows
            ntok += len(flat)
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
    elif fmt == "datatrove":
        with open(temps[1], "wb") as f:
            f.write(np.cumsum(lengths, dtype=np.uint64).astype("<u8").tobytes())
        with open(temps[2], "w", encoding="utf-8") as f:
            f.write(f"{tokenizer}|{dtype.itemsize}\n{ntok}\n")
    return docs, ntok


def _csv_row(start, end, doc_id, source, row):
    """One line of the numpy layout's index, quoted as the csv module would (ids and sources
    may hold commas, quotes or line breaks)."""
    def field(v):
        s = "" if v is None else str(v)
        return '"' + s.replace('"', '""') + '"' if any(c in s for c in ',"\r\n') else s
    return f"{start},{end},{field(doc_id)},{field(source)},{row}\n"


def export(folder, fmt, prefix, *, seed=None, vocab_size=None):
    """Export the shard folder ``folder`` (a COMPLETED run) as format ``fmt`` (one of
    :data:`FORMATS`) at the local path ``prefix``; returns the export manifest. ``seed``:
    shuffle the documents (same seed, same order); ``vocab_size``: the vocabulary the id type
    is chosen for (default: the largest id + 1). Raises :class:`ExportRefused` (a
    ValueError) for a folder without a completed run or outputs that are not ours."""
    if fmt not in FORMATS:
        raise ValueError(f"export format {fmt!r}: one of {', '.join(FORMATS)}")
    if files.is_remote(prefix):
        raise ValueError(f"--out {prefix}: exports are written to local files (their readers "
                         "memory-map them); copy them to the object store afterwards")
    manifest = _completed_manifest(folder)
    prefix = os.path.abspath(prefix)
    if not os.path.isdir(os.path.dirname(prefix)):
        raise ValueError(f"--out {prefix}: the folder {os.path.dirname(prefix)} does not exist")
    _check_targets(fmt, prefix)
    shards = manifest["shards"]
    cardinality = vocab_size if vocab_size is not None else _largest_id(folder, shards) + 1
    dtype = token_dtype(fmt, cardinality)
    targets = output_files(fmt, prefix)
    out = _Outputs(targets)
    sources = []
    work = out.temps[0] + ".buckets"  # the shuffle's buckets, removed at the end
    try:
        if seed is None:
            stream = _in_order(folder, shards, cardinality, sources)
        else:
            cleanup.register(work)
            os.mkdir(work)
            stream = _shuffled(folder, shards, cardinality, sources, seed, dtype, work)
        docs, ntok = _write(fmt, stream, dtype, f"corpustok:{manifest['tokenizer_sha256']}",
                            out.temps)
        if docs != manifest["totals"]["documents"] or ntok != manifest["totals"]["tokens"]:
            raise ExportRefused(f"the shards hold {docs} documents and {ntok} tokens, the run "
                                f"manifest says {manifest['totals']['documents']} and "
                                f"{manifest['totals']['tokens']}")
        result = {"format": EXPORT_FORMAT, "version": 1, "layout": fmt,
                  "files": [os.path.basename(t) for t in targets[:-1]],
                  "source": files.shown(folder), "documents": docs, "tokens": ntok,
                  "dtype": dtype.name, "vocab_cardinality": int(cardinality), "seed": seed,
                  "tokenizer_sha256": manifest["tokenizer_sha256"],
                  "config": manifest["config"], "shards": sources}
        with open(out.temps[-1], "w", encoding="utf-8") as f:
            f.write(json.dumps(result, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        out.publish()
        return result
    except BaseException:
        out.discard()
        raise
    finally:
        cleanup.release(work)
