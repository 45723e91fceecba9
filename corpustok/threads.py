"""One batch's kernel call on several threads: the kernels release the GIL (``nogil``), so a
batch cut into contiguous document ranges runs in parallel, each range in a thread with that
thread's cache and work arrays; the outputs are joined in order, so the ids are those of one
call whatever the thread count.

Equal bytes are not equal work (a language whose words all miss the cache costs several times
an English range), so the batch is cut into :data:`PARTS_PER_THREAD` ranges a thread, and
thread ``t`` (the caller is thread 0, the others come from a pool) takes the ranges of the
``t``-th block of them from its front; a thread whose block is done takes ranges from the back
of the block with the most left. The threads end about one range apart, and text seen again
goes to the thread whose cache saw it. Each tokenizer keeps one pool per thread count, so a
pool thread's chunk cache stays warm from batch to batch.
"""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["ThreadPools", "check_threads", "ranges"]

MIN_PART_BYTES = 1 << 16  # smaller ranges cost more in hand-offs than they gain
PARTS_PER_THREAD = 4  # ranges a thread: one range bounds how far apart the threads end


def check_threads(threads):
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    return threads


def ranges(offsets, parts):
    """Document ranges ``[(a, b)]`` of about equal bytes, at most ``parts`` of them, none
    empty, none under :data:`MIN_PART_BYTES` bytes unless there is only one."""
    n = len(offsets) - 1
    total = int(offsets[-1] - offsets[0])
    parts = max(1, min(parts, n, total // MIN_PART_BYTES))
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
        parts = ranges(offsets, threads * PARTS_PER_THREAD) if threads > 1 else [()]
        if len(parts) == 1:
            return encode(offsets)
        workers = min(threads, len(parts))
        front = [len(parts) * t // workers for t in range(workers)]  # block t: front[t]:back[t]
        back = front[1:] + [len(parts)]
        results = [None] * len(parts)
        lock = threading.Lock()

        def take(t):
            with lock:
                if front[t] == back[t]:
                    t = max(range(workers), key=lambda u: back[u] - front[u])
                    if front[t] == back[t]:
                        return None
                    back[t] -= 1
                    return back[t]
                front[t] += 1
                return front[t] - 1

        def work(t):
            while (k := take(t)) is not None:
                a, b = parts[k]
                results[k] = encode(offsets[a:b + 1])

        helpers = [self._pool(threads).submit(work, t) for t in range(1, workers)]
        try:
            work(0)
        finally:
            for f in helpers:  # every range is done (or failed) before the arrays are joined
                f.exception()
        for f in helpers:
            f.result()
        ids = np.concatenate([r[0] for r in results])
        out = np.zeros(len(offsets), np.int64)
        lengths = np.concatenate([np.diff(r[1]) for r in results])
        np.cumsum(lengths, out=out[1:])
        return ids, out, np.concatenate([r[2] for r in results])

    def _pool(self, threads):
        """The pool of ``threads - 1`` threads that help the caller."""
        with self._lock:
            pool = self._pools.get(threads)
            if pool is None:
                pool = self._pools[threads] = ThreadPoolExecutor(
                    threads - 1, thread_name_prefix="corpustok-encode")
        return pool

    def __reduce__(self):
        return ThreadPools, ()

    def __del__(self):
        for pool in self._pools.values():
            pool.shutdown(wait=False)
