"""One batch's kernel call on several threads: the kernels release the GIL (``nogil``), so a
batch cut into contiguous document ranges of about equal bytes runs in parallel, each range in
its own worker thread with that thread's cache and work arrays; the outputs are joined in
order, so the ids are those of one call whatever the thread count.

Each tokenizer keeps one pool per thread count, so a worker thread's chunk cache stays warm
from batch to batch.
"""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["ThreadPools", "check_threads", "ranges"]

MIN_BYTES_PER_THREAD = 1 << 16  # smaller parts cost more in hand-offs than they gain


def check_threads(threads):
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    return threads


def ranges(offsets, threads):
    """Document ranges ``[(a, b)]`` of about equal bytes, at most ``threads`` of them, none
    empty, none under :data:`MIN_BYTES_PER_THREAD` bytes unless there is only one."""
    n = len(offsets) - 1
    total = int(offsets[-1] - offsets[0])
    parts = max(1, min(threads, n, total // MIN_BYTES_PER_THREAD))
    cuts = np.searchsorted(offsets, offsets[0] + total * np.arange(1, parts) / parts)
    bounds = sorted({0, n, *np.clip(cuts, 1, n - 1).tolist()}) if n else [0, 0]
    return list(zip(bounds, bounds[1:]))


class ThreadPools:
    """Lazily created thread pools, one per thread count, closed with their owner; a copy
    (pickle) starts with none."""

    def __init__(self):
        self._pools = {}
        self._lock = threading.Lock()

    def run(self, encode, offsets, threads):
        """``encode(offsets_part) -> (ids, out_offsets, replaced)`` over :func:`ranges` of
        ``offsets`` on ``threads`` threads; the joined ``(ids, out_offsets, replaced)``."""
        parts = ranges(offsets, threads)
        if len(parts) == 1:
            return encode(offsets)
        with self._lock:
            pool = self._pools.get(threads)
            if pool is None:
                pool = self._pools[threads] = ThreadPoolExecutor(
                    threads, thread_name_prefix="corpustok-encode")
        futures = [pool.submit(encode, offsets[a:b + 1]) for a, b in parts]
        results = [f.result() for f in futures]
        ids = np.concatenate([r[0] for r in results])
        out = np.zeros(len(offsets), np.int64)
        lengths = np.concatenate([np.diff(r[1]) for r in results])
        np.cumsum(lengths, out=out[1:])
        return ids, out, np.concatenate([r[2] for r in results])

    def __reduce__(self):
        return ThreadPools, ()

    def __del__(self):
        for pool in self._pools.values():
            pool.shutdown(wait=False)
