"""One batch's kernel call on several threads: the kernels release the GIL (``nogil``), so a
batch cut into contiguous document ranges runs in parallel, each range in a thread with that
thread's cache and work arrays; the outputs are joined in order, so the ids are those of one
call whatever the thread count.

Equal bytes are not equal work (a language whose words all miss the cache costs several times
an English range), so ranges are cut as threads ask for them (guided self-scheduling): a
range is a share of what no thread has taken yet, ``1 / (2 * workers)`` of it (``workers``:
the threads with a block) and at least :data:`MIN_PART_BYTES`, to the next document start;
the rest of a block rather than leave it less. Each thread (the caller is thread 0, the
others come from a pool) owns one block of about equal bytes and takes its ranges from the
block's front; a thread whose block is done takes one from the back of the block with the
most left. Ranges shrink as the batch runs out, so when one thread finds nothing left the
others are at most a small range from their end, however unequal the text; and text seen
again mostly goes to the thread whose cache saw it. Each tokenizer keeps one pool per thread
count, so a pool thread's chunk cache stays warm from batch to batch.
"""
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from corpustok.arrow import pool_array

__all__ = ["Schedule", "ThreadPools", "check_threads"]

MIN_PART_BYTES = 1 << 16  # smaller ranges cost more in hand-offs than they gain


def check_threads(threads):
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    return threads


class Schedule:
    """The document ranges of a batch (``offsets``) for ``threads`` threads, cut as they are
    taken (see the module docstring); not thread-safe (:class:`ThreadPools` holds a lock).
    ``workers``: how many threads have a block (fewer than ``threads`` for a small batch;
    one when a block would have under :data:`MIN_PART_BYTES`)."""

    def __init__(self, offsets, threads):
        self.offsets = offsets
        n = len(offsets) - 1
        total = int(offsets[-1] - offsets[0])
        count = max(1, min(threads, n, total // MIN_PART_BYTES))
        cuts = np.searchsorted(offsets, offsets[0] + total * np.arange(1, count) / count)
        bounds = [0, *sorted(set(np.clip(cuts, 1, n - 1).tolist())), n]
        self.front, self.back = bounds[:-1], bounds[1:]  # block t's untaken documents
        self.workers = len(self.front)

    def take(self, t):
        """The next range ``(a, b)`` of documents for thread ``t`` (below ``workers``), never
        empty, or None when every document is taken."""
        own = self.front[t] < self.back[t]
        if not own:
            t = max(range(self.workers), key=self._bytes_left)
            if self.front[t] == self.back[t]:
                return None
        offs, a, b = self.offsets, self.front[t], self.back[t]
        left = sum(self._bytes_left(u) for u in range(self.workers))
        size = max(MIN_PART_BYTES, left // (2 * self.workers))
        # a cut that would leave under MIN_PART_BYTES of the block takes all of it
        if own:  # from the front: to the first document start at least size bytes on
            cut = int(np.searchsorted(offs, offs[a] + size))
            cut = min(max(cut, a + 1), b)
            if offs[b] - offs[cut] < MIN_PART_BYTES:
                cut = b
            self.front[t] = cut
            return a, cut
        # from the back: from the last document start at least size bytes before its end
        cut = int(np.searchsorted(offs, offs[b] - size, side="right")) - 1
        cut = max(min(cut, b - 1), a)
        if offs[cut] - offs[a] < MIN_PART_BYTES:
            cut = a
        self.back[t] = cut
        return cut, b

    def _bytes_left(self, t):
        return int(self.offsets[self.back[t]] - self.offsets[self.front[t]])


class ThreadPools:
    """Lazily created thread pools, one per thread count, closed with their owner; a copy
    (pickle) starts with none."""

    def __init__(self):
        self._pools = {}
        self._lock = threading.Lock()

    def run(self, encode, offsets, threads):
        """``encode(offsets_part) -> (ids, out_offsets, replaced)`` over the ranges of a
        :class:`Schedule` of ``offsets`` on ``threads`` threads; the joined ``(ids,
        out_offsets, replaced)``."""
        schedule = Schedule(offsets, threads)
        if schedule.workers == 1:
            return encode(offsets)
        results = {}  # a range's first document -> its output
        lock = threading.Lock()

        def work(t):
            while True:
                with lock:
                    part = schedule.take(t)
                if part is None:
                    return
                a, b = part
                results[a] = encode(offsets[a:b + 1])

        helpers = [self._pool(threads).submit(work, t) for t in range(1, schedule.workers)]
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
        results = [results[a] for a in sorted(results)]
        # joined into Arrow's pool, where each part was written (decision 0046)
        ids = np.concatenate([r[0] for r in results],
                             out=pool_array(sum(len(r[0]) for r in results), results[0][0].dtype))
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
