"""numba.cuda mirror of the substrate codec (:func:`corpustok.kernels.substrate.encode_symbols`).

Optional: ``numba.cuda`` is imported on first use only, so the CPU install never needs a GPU
stack. With the ``numba-cuda`` package installed, ``import numba.cuda`` resolves to NVIDIA's
maintained target; without it, to the deprecated target built into numba (whose simulator,
``NUMBA_ENABLE_CUDASIM=1``, the tests use).

Design (byte-parallel, so every thread does the same small amount of work whatever the
document lengths): the batch's UTF-8 buffer is cut into tiles of ``threads * per_thread``
bytes, one tile per block; each thread owns ``per_thread`` bytes of it and emits the symbols of
the decode steps that *start* in its bytes. Step starts are found locally: a byte that is not a
continuation byte (``0x80..0xBF``) always starts a step, and a step never covers more than three
continuation bytes, so walking from the nearest non-continuation byte at most three bytes back
(never before the document start) gives exactly the steps CPython's ``decode("utf-8",
"replace")`` takes. Passes, all on the device:

1. count: a block stages its tile (plus a 3-byte halo each side) in shared memory with
   coalesced loads, each thread counts its symbols, a block-wide scan turns the counts into
   per-thread offsets inside the block, and the block total is stored; U+FFFD replacements are
   added per document with atomics (rare).
2. scan: one block turns the block totals into block start positions (exclusive prefix sum).
3. write: each block restages its tile, its threads write their symbols into a shared-memory
   output tile with the same step functions as the CPU kernel (``put_symbols``), then the
   block copies that tile to global memory with coalesced stores; the thread that sees a
   document start records the document's output offset.

Global traffic is two reads of the input plus one write of the output (and 2 bytes per thread
of block-local offsets), which is what lets the kernels approach memory bandwidth.
"""
import functools

import numpy as np

from corpustok.kernels.substrate import put_symbols, symbol_count
from corpustok.kernels.unicode import utf8_step

HALO = 3  # a decode step covers at most three bytes after its first one
MAX_SYMBOLS_PER_BYTE = 3  # an invalid byte becomes U+FFFD: 3 UTF-8 symbols
# A tile's steps cover disjoint bytes, at most 3 symbols per byte, except that the last one
# may run past the tile: 4 symbols (a 4-byte character) for as little as 1 byte inside.
STATIC_SHARED_LIMIT = 48 * 1024  # bytes of static shared memory a CUDA block may use
THREADS = 256
# 4 x odd: thread t's bytes start in shared-memory bank 5t mod 32, so the 32 threads of a warp
# walking their chunks hit 32 different banks (16 would give 4-way bank conflicts).
PER_THREAD = 20
cuda = None  # numba.cuda once imported: a module global, so the simulator can swap it


def _cuda():
    """Import numba.cuda on first use (never at module import: the CPU install lacks it)."""
    global cuda
    if cuda is None:
        from numba import cuda as module  # optional: the CPU install lacks it

        cuda = module
    return cuda


def cuda_available():
    """True when ``numba.cuda`` imports and sees a GPU (or runs as the simulator)."""
    try:
        return bool(_cuda().is_available())
    except ImportError:
        return False
    except Exception:  # a broken driver install reads as "no GPU", never as a crash
        return False


def out_span(tile):
    """Most symbols a tile of ``tile`` bytes can produce (see MAX_SYMBOLS_PER_BYTE)."""
    return MAX_SYMBOLS_PER_BYTE * tile + 1


def check_geometry(threads, per_thread):
    """Validate a launch geometry; raises ValueError naming the limit that was broken."""
    if threads < 1 or per_thread < 1:
        raise ValueError(f"threads={threads} and per_thread={per_thread} must both be >= 1")
    tile = threads * per_thread
    if out_span(tile) > 0xFFFF:
        raise ValueError(f"tile of {tile} bytes is too large: block-local offsets are uint16; "
                         "use threads * per_thread <= 21845")
    shared = (tile + 2 * HALO) + 2 * out_span(tile) + 8 * threads + 16
    if shared > STATIC_SHARED_LIMIT:
        raise ValueError(f"tile of {tile} bytes needs {shared} bytes of shared memory, more than "
                         f"{STATIC_SHARED_LIMIT}; lower threads or per_thread")


@functools.lru_cache(maxsize=None)
def kernels(threads=THREADS, per_thread=PER_THREAD):
    """Compile-on-first-use kernels for one geometry: ``(count, scan, write)``.

    Shared-memory sizes must be compile-time constants in CUDA, hence one set per geometry.
    """
    check_geometry(threads, per_thread)
    _cuda()

    tile = threads * per_thread
    span = tile + 2 * HALO
    out_len = out_span(tile)

    @cuda.jit(device=True)
    def block_scan(buf, t):
        """In-place inclusive scan of ``buf[:threads]`` by the block (Hillis-Steele, O(log T))."""
        step = 1
        while step < threads:
            v = buf[t - step] if t >= step else 0
            cuda.syncthreads()
            buf[t] += v
            cuda.syncthreads()
            step *= 2

    @cuda.jit(device=True)
    def doc_of(offsets, p, lo, hi):
        """Largest ``d`` in ``[lo, hi]`` with ``offsets[d] <= p`` (binary search)."""
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if offsets[mid] <= p:
                lo = mid
            else:
                hi = mid - 1
        return lo

    @cuda.jit(device=True)
    def stage(data, offsets, start, sh, docs):
        """Copy bytes ``start-HALO .. start+tile+HALO`` to ``sh`` (coalesced, zero past the
        ends) and find the documents holding the tile's first and last bytes."""
        t = cuda.threadIdx.x
        n = data.shape[0]
        last = offsets.shape[0] - 2
        for k in range(t, span, threads):
            g = start - HALO + k
            sh[k] = data[g] if 0 <= g < n else 0
        if t == 0:
            docs[0] = doc_of(offsets, start, 0, last)
        if t == threads - 1:
            docs[1] = doc_of(offsets, min(start + tile, n) - 1, 0, last)
        cuda.syncthreads()

    @cuda.jit(device=True)
    def walk(sh, origin, a, b, offsets, d, substrate, write, out, j, gbase, per_doc):
        """Decode steps that start in global bytes ``[a, b)`` of document ``d`` onwards.

        ``sh[k]`` holds global byte ``origin + k``. Count mode (``write`` false) returns the
        symbol count and adds U+FFFD replacements to ``per_doc[d]`` (the ``replaced`` array);
        write mode puts symbols at ``out[j:]`` and stores ``gbase + j`` into ``per_doc[d]``
        (the output offsets) for every document starting in ``[a, b)``, plus those starting at
        the end of the data when ``b`` is that end. O(b - a + HALO) plus empty documents.
        """
        n = offsets[offsets.shape[0] - 1]
        doc_start = offsets[d]
        doc_end = offsets[d + 1]
        if write and doc_start == a:  # this thread owns the starts at a, empty docs included
            e = d
            while e >= 0 and offsets[e] == a:
                per_doc[e] = gbase + j
                e -= 1
        i = a
        for k in range(1, HALO + 1):
            q = a - k
            if q < doc_start:
                break
            c0 = sh[q - origin]
            if c0 < 0x80 or c0 >= 0xC0:  # not a continuation byte: a step starts there
                i = q
                break
        count = 0
        bad_total = 0
        while i < b:
            if i == doc_end:
                if not write and bad_total > 0:
                    cuda.atomic.add(per_doc, d, bad_total)
                bad_total = 0
                d += 1
                if write:
                    per_doc[d] = gbase + j
                while offsets[d + 1] == i:  # empty documents start here too
                    d += 1
                    if write:
                        per_doc[d] = gbase + j
                doc_end = offsets[d + 1]
            b0 = np.int64(sh[i - origin])
            if b0 < 0x80:
                cp = b0
                nbytes = 1
                bad = 0
            else:
                cp, nbytes, bad = utf8_step(sh, i - origin, doc_end - origin)
            if i >= a:
                if write:
                    j = put_symbols(cp, substrate, out, j)
                else:
                    count += symbol_count(cp, substrate)
                    bad_total += bad
            i += nbytes
        if not write and bad_total > 0:
            cuda.atomic.add(per_doc, d, bad_total)
        if write and b == n:
            e = offsets.shape[0] - 1
            while e >= 0 and offsets[e] == n:
                per_doc[e] = gbase + j
                e -= 1
        return count

    @cuda.jit
    def count_kernel(data, offsets, substrate, local, block_total, replaced):
        """Pass 1: block-local symbol offsets per thread, block totals, replacements per
        document (``replaced`` must be zeroed). O(bytes / threads) per thread."""
        sh = cuda.shared.array(span, np.uint8)
        part = cuda.shared.array(threads, np.int64)
        docs = cuda.shared.array(2, np.int64)
        t = cuda.threadIdx.x
        blk = cuda.blockIdx.x
        start = blk * tile
        stage(data, offsets, start, sh, docs)
        a = start + t * per_thread
        c = 0
        if a < data.shape[0]:
            b = min(a + per_thread, data.shape[0])
            d = doc_of(offsets, a, docs[0], docs[1])
            c = walk(sh, start - HALO, a, b, offsets, d, substrate, False, sh, 0, 0, replaced)
        part[t] = c
        cuda.syncthreads()
        block_scan(part, t)
        local[blk * threads + t] = part[t] - c
        if t == threads - 1:
            block_total[blk] = part[t]

    @cuda.jit
    def scan_kernel(totals, starts):
        """Pass 2, one block: ``starts[k] = sum(totals[:k])`` for ``k <= len(totals)``.
        O(len / threads + log threads) per thread."""
        part = cuda.shared.array(threads, np.int64)
        t = cuda.threadIdx.x
        nb = totals.shape[0]
        per = (nb + threads - 1) // threads
        lo = min(t * per, nb)
        hi = min(lo + per, nb)
        s = 0
        for k in range(lo, hi):
            s += totals[k]
        part[t] = s
        cuda.syncthreads()
        block_scan(part, t)
        run = part[t] - s
        for k in range(lo, hi):
            starts[k] = run
            run += totals[k]
        if t == threads - 1:
            starts[nb] = part[t]

    @cuda.jit
    def write_kernel(data, offsets, substrate, local, starts, out_offsets, symbols):
        """Pass 3: symbols of each tile staged in shared memory, then stored coalesced;
        output offsets of the documents starting in the tile. O(bytes / threads) per thread."""
        sh = cuda.shared.array(span, np.uint8)
        out = cuda.shared.array(out_len, np.uint16)
        docs = cuda.shared.array(2, np.int64)
        t = cuda.threadIdx.x
        blk = cuda.blockIdx.x
        start = blk * tile
        stage(data, offsets, start, sh, docs)
        a = start + t * per_thread
        gbase = starts[blk]
        if a < data.shape[0]:
            b = min(a + per_thread, data.shape[0])
            d = doc_of(offsets, a, docs[0], docs[1])
            walk(sh, start - HALO, a, b, offsets, d, substrate, True, out,
                 np.int64(local[blk * threads + t]), gbase, out_offsets)
        cuda.syncthreads()
        for k in range(t, starts[blk + 1] - gbase, threads):
            symbols[gbase + k] = out[k]

    return count_kernel, scan_kernel, write_kernel


def _host_offsets(data, offsets):
    """Offsets as int64 from 0 and the bytes they cover; ValueError on non-Arrow offsets."""
    offs = np.asarray(offsets, dtype=np.int64)
    if offs.ndim != 1 or len(offs) < 1:
        raise ValueError("offsets must be a 1-d array of n_docs + 1 positions (Arrow style)")
    bad = np.flatnonzero(offs[1:] < offs[:-1])
    if len(bad):
        raise ValueError(f"offsets decrease at document {bad[0]} ({offs[bad[0]]} > "
                         f"{offs[bad[0] + 1]}); pass Arrow-style non-decreasing offsets")
    if offs[0] < 0 or offs[-1] > len(data):
        raise ValueError(f"offsets span [{offs[0]}, {offs[-1]}) outside the {len(data)}-byte "
                         "data buffer")
    lo = int(offs[0])
    return np.asarray(data[lo:offs[-1]], dtype=np.uint8), offs - lo if lo else offs


def to_device(data, offsets):
    """Copy one batch to the GPU: ``(device uint8 data, device int64 offsets from 0)``."""
    host_data, host_offs = _host_offsets(data, offsets)
    _cuda()
    return cuda.to_device(host_data), cuda.to_device(host_offs)


def encode_on_device(d_data, d_offsets, substrate, threads=THREADS, per_thread=PER_THREAD,
                     timings=None):
    """Symbols of a batch already on the device, left there: ``(symbols uint16, out_offsets
    int64, replaced int64)`` device arrays. One scalar (the symbol total) comes back to the
    host to size the output. O(bytes) work in O(bytes / (threads * per_thread)) blocks.

    ``timings``, a dict, receives the milliseconds of each pass measured with CUDA events
    (``count``, ``scan``, ``write``), for benchmarks.
    """
    _cuda()
    count_kernel, scan_kernel, write_kernel = kernels(threads, per_thread)
    n = d_data.shape[0]
    ndocs = d_offsets.shape[0] - 1
    replaced = cuda.to_device(np.zeros(ndocs, np.int64))
    out_offsets = cuda.to_device(np.zeros(ndocs + 1, np.int64))
    if n == 0:  # only empty documents: nothing to launch
        return cuda.device_array(0, np.uint16), out_offsets, replaced
    tile = threads * per_thread
    nblocks = (n + tile - 1) // tile
    local = cuda.device_array(nblocks * threads, np.uint16)
    totals = cuda.device_array(nblocks, np.int64)
    starts = cuda.device_array(nblocks + 1, np.int64)
    events = [cuda.event() for _ in range(5)] if timings is not None else None
    if events:
        events[0].record()
    count_kernel[nblocks, threads](d_data, d_offsets, substrate, local, totals, replaced)
    if events:
        events[1].record()
    scan_kernel[1, threads](totals, starts)
    if events:
        events[2].record()
    total = int(starts[nblocks:].copy_to_host()[0])
    symbols = cuda.device_array(total, np.uint16)
    if events:
        events[3].record()
    write_kernel[nblocks, threads](d_data, d_offsets, substrate, local, starts, out_offsets,
                                   symbols)
    if events:
        events[4].record()
        events[4].synchronize()
        for name, (a, b) in {"count": (0, 1), "scan": (1, 2), "write": (3, 4)}.items():
            timings[name] = events[a].elapsed_time(events[b])
    return symbols, out_offsets, replaced


def encode_symbols_cuda(data, offsets, substrate, threads=THREADS, per_thread=PER_THREAD):
    """GPU twin of :func:`corpustok.kernels.substrate.encode_symbols`, with identical results.

    ``data`` is a uint8 UTF-8 buffer and ``offsets`` its Arrow-style int32/int64 offsets
    (``offsets[0]`` may be non-zero, as in a sliced Arrow array); invalid UTF-8 becomes U+FFFD
    exactly as on the CPU and is counted per document. Returns host arrays ``(symbols uint16,
    out_offsets int64, replaced int64)``. One host-to-device copy of the batch, three kernel
    launches, one device-to-host copy of each result.
    """
    d_data, d_offsets = to_device(data, offsets)
    symbols, out_offsets, replaced = encode_on_device(d_data, d_offsets, substrate, threads,
                                                      per_thread)
    return symbols.copy_to_host(), out_offsets.copy_to_host(), replaced.copy_to_host()
