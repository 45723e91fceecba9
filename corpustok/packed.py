"""Packed training sequences over a shard folder or an export: fixed windows across document
boundaries, deterministic, resumable mid-epoch, split over ranks, no torch needed.

The token stream is the documents in order, segment by segment (a segment is one shard, or a
slice of an export's memory-mapped tokens of about :data:`SEGMENT_TOKENS`); with a ``seed`` the
segments and the documents inside each are permuted for every epoch (``set_epoch``), which
keeps memory at one segment. Window ``w`` is tokens ``[w * (seq_len + 1), (w + 1) * (seq_len +
1))`` of the stream: ``seq_len + 1`` so that inputs and next-token targets come from one
window, none shared between windows, so every token is in exactly one window of an epoch
(but the last partial one, unless ``drop_last`` is False). Rank ``r`` of ``world_size`` takes
the contiguous windows ``[r * n // world_size, (r + 1) * n // world_size)`` and reads only the
segments they touch (the segments' token counts come from the manifests, not from reading).
"""
import json
import os

import numpy as np

from corpustok._arrow import id_lists

SEGMENT_TOKENS = 16 << 20  # an export is read in slices of about this many tokens


def reorder(flat, offsets, order):
    """The documents ``order`` of ``flat`` (document ``d`` is ``flat[offsets[d]:offsets[d +
    1]]``), one after another, and their offsets."""
    lengths = np.diff(offsets)[order]
    parts = [flat[offsets[d]:offsets[d + 1]] for d in order]
    return (np.concatenate(parts) if parts else flat[:0],
            np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))


def _shard_segments(folder, manifest):
    import pyarrow.parquet as pq

    def loader(path):
        def load():
            return id_lists(pq.read_table(path, columns=["tokens"]).column("tokens"),
                            np.int32)[:2]
        return load

    return [(e["tokens"], loader(os.path.join(folder, e["file"]))) for e in manifest["shards"]]


def _export_segments(prefix, manifest):
    """Slices of an export's token file with their document offsets (memory-mapped)."""
    layout, dtype = manifest["layout"], np.dtype(manifest["dtype"])
    if layout == "megatron":
        idx = np.memmap(prefix + ".idx", np.uint8, mode="r")
        n = int(idx[18:26].view("<u8")[0])
        lengths = np.asarray(idx[34:34 + 4 * n].view("<i4"), np.int64)
        data = np.memmap(prefix + ".bin", dtype.newbyteorder("<"), mode="r")
    elif layout == "datatrove":
        ends = np.fromfile(prefix + ".ds.index", "<u8").astype(np.int64)
        lengths = np.diff(ends, prepend=0)
        data = np.memmap(prefix + ".ds", dtype.newbyteorder("<"), mode="r")
    else:  # numpy: the csv.gz gives each document's start and end
        import csv
        import gzip
        with gzip.open(prefix + ".csv.gz", "rt", encoding="utf-8", newline="") as f:
            lengths = np.array([int(r[1]) - int(r[0]) for r in csv.reader(f)], np.int64)
        data = np.memmap(prefix + ".npy", dtype.newbyteorder("<"), mode="r")
    starts = np.concatenate([[0], np.cumsum(lengths)])
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


class PackedSequences:
    """Windows of ``seq_len + 1`` token ids (int32) over ``source``: a tokenize output folder
    (its run manifest must say COMPLETED) or an export's prefix (``PREFIX.export.json``
    beside it). Iterating yields ``(tokens, starts)``: the window and the positions inside it
    where a document starts (for ``cu_seqlens`` or position resets). Usable as the iterator
    of a torch ``IterableDataset``."""

    def __init__(self, source, seq_len, *, seed=None, drop_last=True, rank=0, world_size=1):
        if seq_len < 1:
            raise ValueError(f"seq_len must be positive, got {seq_len}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} outside world_size {world_size}")
        self.seq_len, self.seed, self.drop_last = seq_len, seed, drop_last
        self.rank, self.world_size = rank, world_size
        source = os.fspath(source)
        run = os.path.join(source, ".corpustok", "manifest.json")
        if os.path.exists(run):
            manifest = _load_json(run)
            if manifest.get("status") != "COMPLETED":
                raise ValueError(f"{run}: status {manifest.get('status')}, not COMPLETED")
            self._segments = _shard_segments(source, manifest)
        elif os.path.exists(source + ".export.json"):
            self._segments = _export_segments(source, _load_json(source + ".export.json"))
        else:
            raise ValueError(f"{source}: neither a tokenize output folder (no "
                             ".corpustok/manifest.json) nor an export prefix (no "
                             f"{source}.export.json)")
        self.epoch = 0
        self._next = 0  # the next window of this rank's range, counted from its start

    def set_epoch(self, epoch):
        """Another permutation (with a seed) and a fresh pass: the epoch's first window."""
        self.epoch = int(epoch)
        self._next = 0

    def _windows(self):
        """This rank's window range ``[first, stop)`` in the epoch's stream."""
        total = sum(n for n, _ in self._segments)
        width = self.seq_len + 1
        n = total // width if self.drop_last else -(-total // width)
        return self.rank * n // self.world_size, (self.rank + 1) * n // self.world_size

    def __len__(self):
        first, stop = self._windows()
        return stop - first

    def _order(self):
        """``(segment order, rng or None)`` of the epoch."""
        if self.seed is None:
            return list(range(len(self._segments))), None
        rng = np.random.Generator(np.random.PCG64([self.seed, self.epoch]))
        return rng.permutation(len(self._segments)).tolist(), rng

    def _segment(self, k, rng_seed):
        flat, offsets = self._segments[k][1]()
        if rng_seed is None:
            return flat, offsets
        rng = np.random.Generator(np.random.PCG64(rng_seed))
        return reorder(flat, offsets, rng.permutation(len(offsets) - 1))

    def __iter__(self):
        first, stop = self._windows()
        order, rng = self._order()
        seeds = [None] * len(order) if rng is None else \
            rng.integers(0, 2**63 - 1, len(order)).tolist()  # per segment, in segment order
        width = self.seq_len + 1
        begin = [0]
        for k in order:
            begin.append(begin[-1] + self._segments[k][0])
        pos = 0
        while first + self._next < stop:
            w = first + self._next
            lo, hi = w * width, min((w + 1) * width, begin[-1])
            out = np.empty(hi - lo, np.int32)
            starts = []
            s = int(np.searchsorted(begin, lo, "right")) - 1
            at = lo
            while at < hi:
                k = order[s]
                if pos != s + 1:  # load the segment (a window may span several)
                    flat, offs = self._segment(k, seeds[k])
                    pos = s + 1
                a = at - begin[s]
                b = min(hi, begin[s + 1]) - begin[s]
                out[at - lo:at - lo + b - a] = flat[a:b]
                docs = offs[(offs >= a) & (offs < b)]
                starts.extend((docs - a + (at - lo)).tolist())
                at += b - a
                s += 1
            self._next += 1
            yield out, np.asarray(starts, np.int32)

    def state_dict(self):
        """What :meth:`load_state_dict` needs to go on with the next window."""
        return {"seed": self.seed, "epoch": self.epoch, "next_window": self._next,
                "seq_len": self.seq_len, "rank": self.rank, "world_size": self.world_size}

    def load_state_dict(self, state):
        """Resume: the next iteration starts at the window after the last one yielded."""
        for key in ("seed", "seq_len", "rank", "world_size"):
            if state[key] != getattr(self, key):
                raise ValueError(f"state of another reader: {key} {state[key]!r}, this one "
                                 f"{getattr(self, key)!r}")
        self.epoch = int(state["epoch"])
        self._next = int(state["next_window"])


def _load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)
