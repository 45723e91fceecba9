"""One batch's kernel call on several threads: the kernels release the GIL (``nogil``), so a
batch cut into contiguous document ranges runs in parallel, each range in a thread with that
thread's cache and work arrays; the outputs are joined in order, so the ids are those of one
call whatever the thread count.

Equal bytes are not equal work (a language whose words all miss the cache costs several times
an English range), so the batch is cut into one block of about equal bytes a thread, and each
block into ranges that halve in size (a half, a quarter, ... of the block, the last two
equal). Thread ``t`` (the caller is thread 0, the others come from a pool) takes its block's
ranges from the front, largest first; a thread whose block is done takes the smallest range
left, from the back of the block with the most ranges left. So the threads end about one
small range apart, and text seen again mostly goes to the thread whose cache saw it. Each
tokenizer keeps one pool per thread count, so a pool thread's chunk cache stays warm from
batch to batch.
"""
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

__all__ = ["ThreadPools", "check_threads", "ranges"]

MIN_PART_BYTES = 1 << 16  # smaller ranges cost more in hand-offs than they gain
HALVINGS = 4  # a block's ranges: 1/2, 1/4, 1/8, 1/16 and 1/16 of it


def check_threads(threads):
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    return threads


def ranges(offsets, threads):
    """The document ranges of a batch for ``threads`` threads: a list of blocks, at most
    ``threads`` of about equal bytes, each a list of ranges ``(a, b)`` that cover it in order,
    halving in size (see the module docstring), each cut at the first document start at or
    after its share; no range empty (but in an empty batch), a block cut only where each
    share is :data:`MIN_PART_BYTES` bytes or more; one range for one thread."""
    n = len(offsets) - 1
    if threads == 1 or n <= 1:
        return [[(0, n)]]
    total = int(offsets[-1] - offsets[0])
    count = max(1, min(threads, n, total // MIN_PART_BYTES))
    cuts = np.searchsorted(offsets, offsets[0] + total * np.arange(1, count) / count)
    bounds = sorted({0, n, *np.clip(cuts, 1, n - 1).tolist()})
    blocks = []
    for a, b in zip(bounds, bounds[1:]):
        size = int(offsets[b] - offsets[a])
        ends = [size - (size >> k) for k in range(1, HALVINGS + 1)
                if size >> k >= MIN_PART_BYTES]
        inner = np.searchsorted(offsets, offsets[a] + np.array(ends, np.int64)).tolist()
        cut = [a, *sorted({c for c in inner if a < c < b}), b]
        blocks.append(list(zip(cut, cut[1:])))
    return blocks


class ThreadPools:
    """Lazily created thread pools, one per thread count, closed with their owner; a copy
    (pickle) starts with none."""

    def __init__(self):
        self._pools = {}
        self._lock = threading.Lock()

    def run(self, encode, offsets, threads):
        """``encode(offsets_part) -> (ids, out_offsets, replaced)`` over :func:`ranges` of
        ``offsets`` on ``threads`` threads; the joined ``(ids, out_offsets, replaced)``."""
        blocks = ranges(offsets, threads)
        parts = [r for block in blocks for r in block]
        if len(parts) == 1:
            return encode(offsets)
        workers = len(blocks)
        back = list(itertools.accumulate(len(b) for b in blocks))  # block t's ranges not
        front = [0] + back[:-1]  # taken yet: parts[front[t]:back[t]]
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
            # Every range is taken once the caller's loop ends, so a helper that has not
            # started (its pool busy with another caller's batch) has nothing left to do and
            # is cancelled (``wait`` would wait for its pool all the same); the others finish
            # their ranges before the arrays are joined.
            helpers = [f for f in helpers if not f.cancel()]
            wait(helpers)
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
