"""Packed training sequences over a shard folder or an export: fixed windows across document
boundaries, deterministic, split over ranks and DataLoader workers, resumable exactly
mid-epoch, every shard checked against its sha256 before its tokens are used; no torch needed.

The token stream is the documents in order, segment by segment (a segment is one shard, or a
slice of an export's memory-mapped tokens of about :data:`SEGMENT_TOKENS`); with a ``seed`` the
segments and the documents inside each are permuted for every epoch (``set_epoch``), which
keeps memory at one segment per reader. Window ``w`` is tokens ``[w * (seq_len + 1), (w + 1) *
(seq_len + 1))`` of the stream: ``seq_len + 1`` so that inputs and next-token targets come from
one window, none shared between windows, so every token is in exactly one window of an epoch
(but the last partial one, unless ``drop_last`` is False). Rank ``r`` of ``world_size`` takes
the contiguous windows ``[r * n // world_size, (r + 1) * n // world_size)`` and reads only the
segments they touch (the segments' token counts come from the manifests, not from reading).

An *item* is what one step of iteration yields: a window, or with ``batch_size`` a batch of
that many consecutive windows of the rank's range (the last one shorter). Positions count the
items of the rank's epoch. Inside a torch DataLoader worker ``k`` of ``K`` a pass that starts at
position ``p`` yields items ``p + k, p + k + K, ...``; the DataLoader takes items from its
workers in turn, so the training loop receives ``p, p + 1, ...``: the order of no workers.

What is read is checked: a folder's run manifest must be a COMPLETED run of this manifest
version, every shard it lists present with its recorded size (at construction) and its recorded
sha256 (when it is read, before any of its tokens are used); an export must be fully published
(no journal left by an interrupted ``corpustok export``) with a data file of its token count.
A state (``state_dict``) carries a fingerprint of the shards (names, sizes, sha256s, token
counts) and is refused by a reader of other data.
"""
import csv
import gzip
import hashlib
import importlib.util
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from corpustok.arrow import id_lists

SEGMENT_TOKENS = 16 << 20  # an export is read in slices of about this many tokens
MANIFEST_VERSION = 2  # the run manifests read here: entries with the shard's file and sha256
STATE_VERSION = 2  # the first with a fingerprint; earlier states had "next_window"
STATE_KEYS = ("version", "fingerprint", "epoch", "position", "workers", "seq_len", "seed",
              "drop_last", "rank", "world_size", "batch_size")
EXPORT_DATA = {"megatron": ".bin", "datatrove": ".ds", "numpy": ".npy"}


def reorder(flat, offsets, order):
    """The documents ``order`` of ``flat`` (document ``d`` is ``flat[offsets[d]:offsets[d +
    1]]``), one after another, and their offsets."""
    lengths = np.diff(offsets)[order]
    parts = [flat[offsets[d]:offsets[d + 1]] for d in order]
    return (np.concatenate(parts) if parts else flat[:0],
            np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))


def _fingerprint(identity):
    """The first 16 hex digits of the sha256 of ``identity`` (JSON-serializable)."""
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# ---- where the files are ------------------------------------------------------------------

class _Files:
    """The few file operations the reader needs, on the local disk (``fs`` None) or on a
    ``pyarrow.fs.FileSystem`` (S3, GCS, HDFS, ...: paths without their scheme)."""

    def __init__(self, fs=None):
        self.fs = fs

    def exists(self, path):
        if self.fs is None:
            return os.path.exists(path)
        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def size(self, path):
        """The file's size in bytes; FileNotFoundError when it is missing."""
        if self.fs is None:
            return os.stat(path).st_size
        info = self.fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(path)
        return info.size

    def read(self, path):
        if self.fs is None:
            with open(path, "rb") as f:
                return f.read()
        with self.fs.open_input_stream(path) as f:
            return f.read()


def _located(source, filesystem):
    """``(path, files)``: ``source`` on the given ``pyarrow.fs.FileSystem`` (its scheme
    dropped), or on the filesystem its URI names (``s3://bucket/out``: pyarrow's, configured
    from the environment), or a local path."""
    if filesystem is None and "://" not in source:
        return source, _Files()
    if filesystem is None:
        filesystem, path = pafs.FileSystem.from_uri(source)
        return path, _Files(filesystem)
    return (source.split("://", 1)[1] if "://" in source else source), _Files(filesystem)


# ---- shard folders -----------------------------------------------------------------------

def _folder_segments(folder, run, files):
    """``(segments, fingerprint)`` of the tokenize output ``folder`` whose run manifest is at
    ``run``: a segment per listed shard, each shard's presence and size checked here."""
    manifest = json.loads(files.read(run))
    _check_run_manifest(folder, run, manifest)
    segments, identity = [], []
    for e in manifest["shards"]:
        path = f"{folder.rstrip('/')}/{e['file']}"
        _check_size(folder, path, e["parquet_bytes"], files)
        segments.append((e["tokens"], _shard_loader(folder, path, e, files)))
        identity.append([e["file"], e["parquet_bytes"], e["sha256"], e["tokens"]])
    return segments, _fingerprint(identity)


def _check_run_manifest(folder, run, manifest):
    if manifest.get("format") != "corpustok-shards":
        raise ValueError(f"{run}: format {manifest.get('format')!r}, not a corpustok run "
                         "manifest")
    version = manifest.get("version")
    shards = manifest.get("shards") or []
    if version == 1 or (version == MANIFEST_VERSION and not all("sha256" in e for e in shards)):
        raise ValueError(f"{run}: written by an earlier corpustok (manifest version 1, no "
                         "sha256 of the shards to check them by): redo it with `corpustok "
                         f"tokenize ... --out {folder} --overwrite`")
    if version != MANIFEST_VERSION:
        raise ValueError(f"{run}: manifest version {version!r}, this corpustok reads version "
                         f"{MANIFEST_VERSION}: update corpustok")
    if manifest.get("status") != "COMPLETED":
        raise ValueError(f"{run}: status {manifest.get('status')}, not COMPLETED")


def _check_size(folder, path, expected, files):
    try:
        size = files.size(path)
    except FileNotFoundError:
        raise ValueError(f"{path}: missing, though the run manifest lists it: check the "
                         f"folder with `corpustok verify {folder}` and rerun `corpustok "
                         "tokenize` to remake it") from None
    if size != expected:
        raise ValueError(f"{path}: {size} bytes, the run manifest says {expected}: damaged or "
                         f"replaced; check the folder with `corpustok verify {folder}` and "
                         "rerun `corpustok tokenize` to remake it")


def _shard_loader(folder, path, entry, files):
    """A function reading the shard at ``path`` whole: its bytes hashed and checked against
    ``entry`` before they are parsed, then its ``(ids int32, offsets)``."""
    def load():
        data = files.read(path)
        sha = hashlib.sha256(data).hexdigest()
        if sha != entry["sha256"]:
            raise ValueError(f"{path}: damaged or replaced: sha256 {sha}, expected "
                             f"{entry['sha256']} (the run manifest's); check the folder with "
                             f"`corpustok verify {folder}` and rerun `corpustok tokenize` to "
                             "remake it")
        table = pq.read_table(pa.BufferReader(data), columns=["tokens"])
        flat, offsets, _ = id_lists(table.column("tokens"), np.int32)
        if len(flat) != entry["tokens"] or len(offsets) - 1 != entry["documents"]:
            raise ValueError(f"{path}: {len(offsets) - 1} documents of {len(flat)} tokens, "
                             f"the run manifest says {entry['documents']} of {entry['tokens']}")
        return flat, offsets
    return load


# ---- exports -----------------------------------------------------------------------------

def _export_segments(prefix, manifest):
    """``(segments, fingerprint)`` of an export: slices of its memory-mapped token file with
    their document offsets; the data file's size and the index's counts checked here."""
    layout, dtype = manifest.get("layout"), np.dtype(manifest["dtype"])
    if layout not in EXPORT_DATA:
        raise ValueError(f"{prefix}.export.json: layout {layout!r}, not one of "
                         f"{', '.join(EXPORT_DATA)}")
    path = prefix + EXPORT_DATA[layout]
    size = os.stat(path).st_size
    if size != manifest["tokens"] * dtype.itemsize:
        raise ValueError(f"{path}: {size} bytes, {prefix}.export.json says {manifest['tokens']} "
                         f"tokens of {dtype.itemsize} bytes: damaged or replaced; rerun "
                         "`corpustok export` to remake it")
    lengths = _export_lengths(prefix, layout)
    if len(lengths) != manifest["documents"] or int(lengths.sum()) != manifest["tokens"]:
        raise ValueError(f"{prefix}: the index holds {len(lengths)} documents of "
                         f"{int(lengths.sum())} tokens, {prefix}.export.json says "
                         f"{manifest['documents']} of {manifest['tokens']}: damaged or "
                         "replaced; rerun `corpustok export` to remake it")
    data = np.memmap(path, dtype.newbyteorder("<"), mode="r") if size else np.zeros(0, dtype)
    identity = {k: manifest.get(k) for k in ("layout", "files", "tokens", "documents", "dtype",
                                             "seed", "shards")}
    identity["data_bytes"] = size
    return _slices(data, lengths), _fingerprint(identity)


def _export_lengths(prefix, layout):
    """The documents' token counts from an export's index."""
    if layout == "megatron":
        idx = np.memmap(prefix + ".idx", np.uint8, mode="r")
        n = int(idx[18:26].view("<u8")[0])
        return np.asarray(idx[34:34 + 4 * n].view("<i4"), np.int64)
    if layout == "datatrove":
        return np.diff(np.fromfile(prefix + ".ds.index", "<u8").astype(np.int64), prepend=0)
    with gzip.open(prefix + ".csv.gz", "rt", encoding="utf-8", newline="") as f:
        return np.array([int(r[1]) - int(r[0]) for r in csv.reader(f)], np.int64)


def _slices(data, lengths):
    """Segments of about :data:`SEGMENT_TOKENS` of ``data``, whole documents each."""
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    segments = []
    d = 0
    while d < len(lengths):
        e = int(np.searchsorted(starts, starts[d] + SEGMENT_TOKENS, "right")) - 1
        e = min(len(lengths), max(e, d + 1))
        a, b = int(starts[d]), int(starts[e])

        def load(a=a, b=b, d=d, e=e):
            return np.asarray(data[a:b], np.int32), starts[d:e + 1] - a
        segments.append((b - a, load))
        d = e
    return segments


def _open(source, filesystem=None):
    """``(segments, fingerprint)`` of a folder (local or on ``filesystem``) or a local export
    prefix."""
    folder, files = _located(source, filesystem)
    run = f"{folder.rstrip('/')}/.corpustok/manifest.json"
    if files.exists(run):
        return _folder_segments(folder, run, files)
    if files.fs is not None:
        raise ValueError(f"{source}: no tokenize output folder there (no .corpustok/manifest"
                         ".json); an export is memory-mapped, so it is read from a local path")
    if os.path.exists(source + ".export.journal"):
        raise ValueError(f"{source}.export.journal: the export at {source} was interrupted "
                         "while its files were put in place: rerun `corpustok export` to "
                         "finish it")
    if os.path.exists(source + ".export.json"):
        return _export_segments(source, _load_json(source + ".export.json"))
    raise ValueError(f"{source}: neither a tokenize output folder (no .corpustok/manifest.json)"
                     f" nor an export prefix (no {source}.export.json)")


# ---- one epoch's stream ------------------------------------------------------------------

class _Stream:
    """The token stream of one epoch: the segments in the epoch's order, each permuted by
    its own seed, loaded one at a time as reads move forward."""

    def __init__(self, segments, seed, epoch):
        self.segments = segments
        self.order = list(range(len(segments)))
        self.seeds = [None] * len(segments)
        if seed is not None:
            rng = np.random.Generator(np.random.PCG64([seed, epoch]))
            self.order = rng.permutation(len(segments)).tolist()
            self.seeds = rng.integers(0, 2**63 - 1, len(segments)).tolist()  # segment order
        self.begin = np.concatenate([[0], np.cumsum([segments[k][0] for k in self.order])])
        self.begin = self.begin.astype(np.int64)
        self._held = (None, None, None)  # (place in order, ids, offsets)

    def _load(self, s):
        if self._held[0] != s:
            k = self.order[s]
            flat, offsets = self.segments[k][1]()
            if self.seeds[k] is not None:
                rng = np.random.Generator(np.random.PCG64(self.seeds[k]))
                flat, offsets = reorder(flat, offsets, rng.permutation(len(offsets) - 1))
            self._held = (s, flat, offsets)
        return self._held[1:]

    def read(self, lo, hi, out):
        """Write tokens ``[lo, hi)`` of the stream into ``out``; return the positions in it
        where a document starts, 0 first (the window starts a document or a piece of one)."""
        starts = [np.zeros(1, np.int64)]
        s = int(np.searchsorted(self.begin, lo, "right")) - 1
        at = lo
        while at < hi:
            flat, offsets = self._load(s)
            a = at - self.begin[s]
            b = min(hi, self.begin[s + 1]) - self.begin[s]
            out[at - lo:at - lo + b - a] = flat[a:b]
            i, j = np.searchsorted(offsets, [a, b], "left")
            starts.append(offsets[i:j] - a + (at - lo))
            at += b - a
            s += 1
        return np.unique(np.concatenate(starts)).astype(np.int32)


def _worker():
    """``(id, count)`` of the torch DataLoader worker this runs in, ``(0, 1)`` outside one
    (torch not imported means no DataLoader, so torch is never imported here)."""
    data = sys.modules.get("torch.utils.data")
    info = None if data is None else data.get_worker_info()
    return (0, 1) if info is None else (info.id, info.num_workers)


def _register_with_torch(cls):
    """Make ``cls`` a torch ``IterableDataset`` (a registered virtual subclass) when torch is
    installed, so that a DataLoader iterates it instead of indexing it; torch is imported here,
    on first use, and stays optional."""
    try:
        if "torch.utils.data" not in sys.modules and importlib.util.find_spec("torch") is None:
            return
        from torch.utils.data import IterableDataset  # optional: torch is no dependency
    except (ImportError, ValueError, OSError):  # a broken install: no DataLoader to serve
        return
    IterableDataset.register(cls)


class _Pass:
    """Where a pass started, its stride over items (the workers sharing it) and how many
    items it has yielded: what ``state_dict`` reports."""

    def __init__(self, start, workers):
        self.start, self.workers, self.yielded = start, workers, 0


class PackedSequences:
    """Windows of ``seq_len + 1`` token ids (int32) over ``source``: a tokenize output folder
    (its run manifest must say COMPLETED) or an export's prefix (``PREFIX.export.json``
    beside it); a torch ``IterableDataset`` (registered as one when torch is installed; torch
    is not needed otherwise).

    Iterating yields, with ``batch_size=None``, ``(tokens int32[seq_len + 1], starts
    int32[k])``; with ``batch_size=B``, batches of ``B`` consecutive windows ``(tokens
    int32[b, seq_len + 1], [starts per window])``, ``b = B`` but in the rank's last batch
    (batches need whole windows, so ``drop_last`` must stay True). ``starts`` are the positions
    in the window where a document, or the piece of one the window begins with, starts: 0, then
    each later document start, ascending: ``cu_seqlens`` without its final ``seq_len + 1``.
    For the inputs ``tokens[:-1]``, ``cu_seqlens`` are the starts below ``seq_len`` and then
    ``seq_len``; position ids restart at each start.

    ``source`` may be on an object store: a URI (``s3://bucket/shards``, ``gs://...``: pyarrow's
    filesystem for it, configured from the environment) or a path on ``filesystem``, a
    ``pyarrow.fs.FileSystem`` (e.g. ``S3FileSystem(endpoint_override=..., access_key=...)``;
    it travels to DataLoader workers with the reader). Exports are memory-mapped: local only.

    ``seed``: a non-negative int permuting segments and documents for every epoch, None keeps
    the documents in order. ``rank``/``world_size``: this process's share of every epoch.
    ``len()`` is the number of items of the rank's epoch. Each shard is read whole, checked
    against the sha256 in the run manifest, when the stream reaches it: a damaged or replaced
    shard raises ValueError then (a missing one or one of another size at construction).

    Passes and resumption: ``iter()`` starts a pass at the current position: 0, or where
    :meth:`load_state_dict` put it; a pass does not move it (iterating again without
    :meth:`set_epoch` repeats the pass). Call ``set_epoch(e)`` before each epoch, as with
    torch's ``DistributedSampler``. :meth:`state_dict` tells where to go on: in the main
    process from what this object yielded, or, when DataLoader workers iterate copies of it,
    from the ``consumed`` items the training loop counted; inside a worker (what torchdata's
    ``StatefulDataLoader`` saves and restores per worker) from that worker's progress. With
    ``persistent_workers=True`` torch keeps the workers' copies between epochs, so
    ``set_epoch`` and ``load_state_dict`` on this object do not reach them: don't combine them.
    Each worker holds one segment (a shard, or :data:`SEGMENT_TOKENS` of an export) in memory.

    Recipe (``batch_size=None`` in the DataLoader: each item is already a batch; the default
    collate turns the arrays into tensors, ``starts`` into a list of tensors; keep the
    DataLoader's ``in_order=True``, the default, which ``consumed`` counts on)::

        from torch.utils.data import DataLoader
        ps = PackedSequences("shards", seq_len=2048, batch_size=8, seed=0, rank=r,
                             world_size=w)
        loader = DataLoader(ps, batch_size=None, num_workers=2)
        epoch = 0
        if saved:                        # a checkpoint's state: its epoch, mid-way
            ps.load_state_dict(saved)
            epoch = saved["epoch"]
        else:
            ps.set_epoch(0)
        while epoch < epochs:
            for steps, (tokens, starts) in enumerate(loader, 1):
                ...                      # inputs tokens[:, :-1], targets tokens[:, 1:]
                if checkpoint_due:
                    save(model, state=ps.state_dict(consumed=steps))
            epoch += 1
            ps.set_epoch(epoch)
    """

    def __init__(self, source, seq_len, *, seed=None, drop_last=True, rank=0, world_size=1,
                 batch_size=None, filesystem=None):
        self.source = os.fspath(source)
        self.filesystem = filesystem
        self.seq_len = _check_int("seq_len", seq_len, 1)
        self.world_size = _check_int("world_size", world_size, 1)
        self.rank = _check_int("rank", rank, 0)
        if rank >= world_size:
            raise ValueError(f"rank {rank} outside world_size {world_size}")
        self.seed = None if seed is None else _check_int("seed", seed, 0)
        self.batch_size = None if batch_size is None else _check_int("batch_size", batch_size, 1)
        self.drop_last = bool(drop_last)
        if batch_size is not None and not drop_last:
            raise ValueError("batch_size needs drop_last=True: a batch holds whole windows")
        self._segments, self.fingerprint = _open(self.source, filesystem)
        _register_with_torch(type(self))
        self.epoch = 0
        self._start = 0  # the position the next pass starts at
        self._pass = None  # the pass last started, while its start is the current one

    def __getstate__(self):
        """What a copy gets (a DataLoader worker started by spawn or forkserver, which pickles
        the dataset): the arguments and the position, not open files and loaders; the copy
        opens the source again and must find the same data."""
        return {"source": self.source, "seq_len": self.seq_len, "seed": self.seed,
                "drop_last": self.drop_last, "rank": self.rank, "world_size": self.world_size,
                "batch_size": self.batch_size, "fingerprint": self.fingerprint,
                "epoch": self.epoch, "start": self._start, "filesystem": self.filesystem}

    def __setstate__(self, state):
        self.__init__(state["source"], state["seq_len"], seed=state["seed"],
                      drop_last=state["drop_last"], rank=state["rank"],
                      world_size=state["world_size"], batch_size=state["batch_size"],
                      filesystem=state.get("filesystem"))
        if self.fingerprint != state["fingerprint"]:
            raise ValueError(f"{self.source}: changed since the reader was made (fingerprint "
                             f"{self.fingerprint}, then {state['fingerprint']})")
        self.epoch, self._start = state["epoch"], state["start"]

    def set_epoch(self, epoch):
        """Another permutation (with a seed) and a fresh pass: the epoch's first item."""
        self.epoch, self._start, self._pass = _check_int("epoch", epoch, 0), 0, None

    def _windows(self):
        """This rank's window range ``[first, stop)`` in the epoch's stream."""
        total = sum(n for n, _ in self._segments)
        width = self.seq_len + 1
        n = total // width if self.drop_last else -(-total // width)
        return self.rank * n // self.world_size, (self.rank + 1) * n // self.world_size

    def __len__(self):
        first, stop = self._windows()
        return stop - first if self.batch_size is None else -(-(stop - first) // self.batch_size)

    def __iter__(self):
        worker, workers = _worker()
        self._pass = _Pass(self._start, workers)
        return self._items(self._pass, self._start + worker, workers)

    def _items(self, progress, item, step):
        """Items ``item, item + step, ...`` of the epoch, counted in ``progress``."""
        first, stop = self._windows()
        stream = _Stream(self._segments, self.seed, self.epoch)
        for i in range(item, len(self), step):
            if self.batch_size is None:
                out = self._window(stream, first + i)
            else:
                windows = range(first + i * self.batch_size,
                                min(first + (i + 1) * self.batch_size, stop))
                tokens = np.empty((len(windows), self.seq_len + 1), np.int32)
                out = tokens, [self._window(stream, w, row)[1] for row, w in zip(tokens, windows)]
            progress.yielded += 1
            yield out

    def _window(self, stream, w, out=None):
        """``(tokens, starts)`` of window ``w``, its tokens written into ``out`` if given."""
        width = self.seq_len + 1
        lo = w * width
        hi = min(lo + width, int(stream.begin[-1]))
        out = np.empty(hi - lo, np.int32) if out is None else out
        return out, stream.read(lo, hi, out)

    def state_dict(self, consumed=None):
        """Where the next pass should start, to go on exactly after what was used: a dict of
        plain values for :meth:`load_state_dict` (of this object or of a new one over the same
        data with the same arguments). ``consumed``: the items the training loop received in
        the current pass, needed in the main process when DataLoader workers iterate (they
        hold copies of this object, so it cannot see what they yielded). Without it, the items
        this object yielded in its last pass; inside a DataLoader worker, that worker's: such
        a state resumes worker ``k`` of the same number of workers (as torchdata's
        ``StatefulDataLoader`` restores them). Its ``workers`` is 1 for a position in the whole
        pass, ``K`` for worker ``k``'s of ``K`` (its next item less ``k``)."""
        n = len(self)
        if consumed is not None:
            _check_int("consumed", consumed, 0)
            if self._start + consumed > n:
                raise ValueError(f"consumed {consumed}: the pass started at item {self._start} "
                                 f"of {n}, so at most {n - self._start} remain")
            position, workers = self._start + consumed, 1
        elif self._pass is None:
            position, workers = self._start, _worker()[1]
        else:
            p = self._pass
            position, workers = min(n, p.start + p.yielded * p.workers), p.workers
        return {"version": STATE_VERSION, "fingerprint": self.fingerprint, "epoch": self.epoch,
                "position": position, "workers": workers, "seq_len": self.seq_len,
                "seed": self.seed, "drop_last": self.drop_last, "rank": self.rank,
                "world_size": self.world_size, "batch_size": self.batch_size}

    def load_state_dict(self, state):
        """Position the next pass (``iter()``) where ``state`` says: its epoch, its item.
        Raises ValueError, naming what is wrong, for a state that is malformed, of another
        dataset (another fingerprint: other shards, or shards added or changed since) or of
        another reader (other seq_len, seed, drop_last, rank, world_size or batch_size)."""
        _check_state(state)
        for key in ("fingerprint", "seq_len", "seed", "drop_last", "rank", "world_size",
                    "batch_size"):
            if state[key] != getattr(self, key):
                what = "dataset" if key == "fingerprint" else "reader"
                raise ValueError(f"state of another {what}: {key} {state[key]!r}, this one "
                                 f"{getattr(self, key)!r}")
        if not state["position"] <= len(self):
            raise ValueError(f"state position {state['position']} is past the epoch's end "
                             f"({len(self)} items)")
        workers = state["workers"]
        if workers > 1 and _worker()[1] != workers:
            raise ValueError(f"the state of a DataLoader worker (one of {workers}) resumes only "
                             f"inside a worker of {workers}, as torchdata's StatefulDataLoader "
                             "restores it; in the main process use state_dict(consumed=...)")
        self.epoch, self._start = int(state["epoch"]), int(state["position"])
        self._pass = None


def _check_int(name, value, least):
    """``value`` as an int, refused unless an int (not a bool) of at least ``least``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")
    return int(value)


def _check_state(state):
    """Refuse a state that is not one :meth:`PackedSequences.state_dict` made."""
    if not isinstance(state, dict):
        raise ValueError(f"state must be a dict from state_dict(), got {type(state).__name__}")
    if "next_window" in state and "version" not in state:
        raise ValueError("a state of an earlier corpustok (next_window): it cannot be resumed "
                         "exactly; start the epoch again with set_epoch")
    missing = [k for k in STATE_KEYS if k not in state]
    if missing:
        raise ValueError(f"state lacks {', '.join(missing)}: not a state_dict() of this reader")
    if state["version"] != STATE_VERSION:
        raise ValueError(f"state version {state['version']!r}, this corpustok reads "
                         f"{STATE_VERSION}")
    if not isinstance(state["fingerprint"], str):
        raise ValueError(f"state fingerprint must be a str, got {state['fingerprint']!r}")
    if not isinstance(state["drop_last"], bool):
        raise ValueError(f"state drop_last must be a bool, got {state['drop_last']!r}")
    for key, least in (("epoch", 0), ("position", 0), ("workers", 1), ("seq_len", 1),
                       ("rank", 0), ("world_size", 1)):
        _check_int(f"state {key}", state[key], least)
    for key, least in (("seed", 0), ("batch_size", 1)):
        if state[key] is not None:
            _check_int(f"state {key}", state[key], least)


def _load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)
