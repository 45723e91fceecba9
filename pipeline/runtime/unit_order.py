"""The order in which a tokenize job hands its reading units to Beam.

Two rules, neither of which changes a byte of the output (shards and manifests do not depend
on the order):

- :func:`largest_first`: whole JSONL and text files first (their size is unknown before they
  are read, and they are a job's longest units), then Parquet row groups by the size of their
  text, largest first. The last units to start are the smallest, so workers that take units
  as they go finish together.
- :func:`spread_over`: Beam's local runner does not hand units out as workers go. Before the
  step runs, it splits the step's elements among its ``direct_num_workers`` workers by
  position (element ``i`` to worker ``i % n``; ``fn_runner.ParallelBundleManager`` and the
  buffers' ``partition``), and each worker runs its share in one bundle. A largest-first list
  split that way gives the first worker the larger unit of every ``n`` (a 1 GB job of 16 row
  groups: 520 against 485 MB of text, about 0.8 s of a 15 s run with two workers). The
  units are therefore placed so that no worker's share of the text is larger than under that
  split, and as even as swapping units between two workers makes it (the GB job's: 502.9 and
  502.4 MB), each worker's own units still largest first. Other runners (Dask) get
  :func:`largest_first`. The shares count every planned row group: on a rerun, the ones whose
  shards are complete are skipped inside the step, so the shares of the work left can differ.
"""
import bisect

MAX_SWAP_ROUNDS = 64  # improvements tried by spread_over (each moves text between two workers)


def largest_first(units):
    """The units, whole JSONL and text files first, then Parquet row groups by the size of
    their text (``Unit.text_bytes``, from the footer), largest first, ties in input order."""
    return sorted(units, key=lambda u: (u.kind == "parquet", -u.text_bytes))


def spread_over(units, workers):
    """:func:`largest_first`'s units placed for ``workers`` local workers that take element
    ``i`` at worker ``i % workers`` (see the module docstring): the Parquet row groups are
    shared so that the largest share of text is as small as swapping units between two
    workers makes it (from the plain split of the largest-first order, which it never makes
    worse), and each worker's units stay largest first. Whole files keep their places at the
    front (their sizes are unknown). ``workers`` None or 1: :func:`largest_first`."""
    order = largest_first(units)
    n = workers or 1
    head = [u for u in order if u.kind != "parquet"]
    tail = order[len(head):]
    if n < 2 or len(tail) <= n:
        return order
    owner = [(len(head) + p) % n for p in range(len(tail))]  # the worker of each tail slot
    shares = [[] for _ in range(n)]  # positions in tail: sorted, they are largest first
    for p, w in enumerate(owner):
        shares[w].append(p)
    _balance(shares, [u.text_bytes for u in tail])
    queues = [iter(sorted(s)) for s in shares]
    return head + [tail[next(queues[w])] for w in owner]


def _balance(shares, size):
    """Swap units (positions into ``size``) between the most loaded share and another, one
    pair at a time, the pair that brings the two loads closest, while that lowers the larger
    of them; counts of units per share never change. Each round O(units log units)."""
    load = [sum(size[p] for p in s) for s in shares]
    for _ in range(MAX_SWAP_ROUNDS):
        hi = max(range(len(shares)), key=load.__getitem__)
        best = None  # (new larger load of the pair, share, index in hi, index in share)
        for w, share in enumerate(shares):
            if w == hi or load[w] >= load[hi]:
                continue
            order = sorted(range(len(share)), key=lambda k: size[share[k]])
            sizes = [size[share[k]] for k in order]
            half = (load[hi] - load[w]) / 2  # the text a swap should move
            for a, pa in enumerate(shares[hi]):
                j = bisect.bisect_left(sizes, size[pa] - half)
                for c in (j - 1, j):
                    if 0 <= c < len(sizes) and sizes[c] < size[pa]:
                        moved = size[pa] - sizes[c]
                        top = max(load[hi] - moved, load[w] + moved)
                        if top < load[hi] and (best is None or top < best[0]):
                            best = (top, w, a, order[c])
        if best is None:
            return
        _, w, a, b = best
        moved = size[shares[hi][a]] - size[shares[w][b]]
        shares[hi][a], shares[w][b] = shares[w][b], shares[hi][a]
        load[hi] -= moved
        load[w] += moved
