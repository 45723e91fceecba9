"""The substrate codec on a CUDA GPU against the CPU kernel, on batches of 1 MB to 1 GB.

    .venv/bin/python bench/cuda_substrate.py [--sizes-mb 1,10,100,1000] [--runs 3]
        [--substrates ube,utf8,utf16] [--geometry 256x16,128x32]

Batches are lines of the shared corpus (``../shared/data/corpus/*.txt.xz``, or the embedded
UDHR sample when that is absent), repeated up to the batch size, one line per document. For
each batch it prints the host-to-device copy (pageable and pinned host memory), the time of the
three kernels (CUDA events, each pass and their sum; GB/s counts UTF-8 input bytes), the
end-to-end call ``encode_symbols_cuda`` (copy in, kernels, copy out) and the CPU kernel
``encode_symbols`` on the same batch, with ratios; the GPU output is checked equal to the CPU
output first. Without a GPU it says so and exits 0. ``--allow-simulator`` runs it on numba's
CUDA simulator to test the script itself (tiny sizes only; those numbers mean nothing).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from _common import REPO, SHARED_CORPUS, banner, corpus_lines, timed
from corpustok.kernels import cuda as kc
from corpustok.kernels.substrate import UBE, UTF8, UTF16, encode_symbols

SUBSTRATES = {"utf8": UTF8, "utf16": UTF16, "ube": UBE}


def corpus_bytes():
    """(UTF-8 bytes, line start offsets) of the benchmark text, and where it came from."""
    if sorted(SHARED_CORPUS.glob("*.txt.xz")):
        text, source = "".join(corpus_lines()), f"{SHARED_CORPUS}/*.txt.xz"
    else:
        path = REPO / "corpustok" / "data" / "udhr_sample.jsonl"
        with open(path, encoding="utf-8") as f:
            text = "".join(json.loads(line)["text"] + "\n" for line in f)
        source = f"{path} (shared corpus absent)"
    data = np.frombuffer(text.encode("utf-8"), np.uint8)
    starts = np.concatenate([[0], np.flatnonzero(data == 0x0A) + 1]).astype(np.int64)
    if starts[-1] != len(data):
        starts = np.append(starts, len(data))
    return data, starts, source


def make_batch(data, starts, nbytes):
    """About ``nbytes`` of whole lines: the corpus repeated, cut at a line end."""
    reps = max(1, -(-nbytes // len(data)))
    big = np.tile(data, reps)
    offs = np.concatenate([starts[:-1] + r * len(data) for r in range(reps)] + [[reps * len(data)]])
    k = max(1, int(np.searchsorted(offs, nbytes, side="right")) - 1)
    offs = offs[: k + 1]
    return big[: offs[-1]].copy(), offs.copy()


def median_ms(fn, runs):
    """Median of ``runs`` timings of ``fn()`` (returning milliseconds), after a warm-up."""
    fn()
    return statistics.median(fn() for _ in range(runs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes-mb", default="1,10,100,1000", help="batch sizes in MB (1e6 bytes)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per measurement (median)")
    ap.add_argument("--substrates", default="ube,utf8,utf16")
    ap.add_argument("--geometry", default=f"{kc.THREADS}x{kc.PER_THREAD}",
                    help="comma-separated THREADSxBYTES_PER_THREAD launch geometries")
    ap.add_argument("--allow-simulator", action="store_true",
                    help="run on NUMBA_ENABLE_CUDASIM=1 to test the script (numbers meaningless)")
    args = ap.parse_args()
    banner("substrate codec: CUDA kernels vs the CPU kernel", ("numpy", "numba"))
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and not args.allow_simulator:
        print("NUMBA_ENABLE_CUDASIM=1: the simulator is no benchmark (pass --allow-simulator "
              "to test this script on it)")
        return 0
    if not kc.cuda_available():
        print("no CUDA GPU available (numba.cuda.is_available() is False): nothing to measure")
        return 0
    from numba import cuda

    ctx = cuda.current_context()
    dev = ctx.device
    name = getattr(dev, "name", "CUDA simulator")
    name = name.decode() if isinstance(name, bytes) else name
    free, total_mem = ctx.get_memory_info()
    try:
        from importlib.metadata import version
        target = f"numba-cuda {version('numba-cuda')}"
    except Exception:
        target = f"numba built-in CUDA target ({getattr(cuda, 'implementation', '?')})"
    print(f"GPU: {name}, compute capability {dev.compute_capability}, "
          f"{total_mem / 2**30:.0f} GiB ({free / 2**30:.0f} free); {target}")
    data, starts, source = corpus_bytes()
    print(f"input: {source}, {len(data) / 1e6:.1f} MB, {len(starts) - 1:,} lines; "
          f"median of {args.runs} runs; GB/s = UTF-8 input bytes per second\n")
    geometries = [tuple(int(x) for x in g.split("x")) for g in args.geometry.split(",")]
    head = (f"{'MB':>7} {'docs':>10} {'substrate':>9} {'geometry':>8} {'H2D GB/s':>8} "
            f"{'pinned':>7} {'kernel ms':>9} {'kern GB/s':>9} {'total ms':>9} {'tot GB/s':>8} "
            f"{'CPU ms':>8} {'CPU GB/s':>8} {'kern/CPU':>8} {'tot/CPU':>8}  count/scan/write ms")
    print(head)
    for size_mb in (float(s) for s in args.sizes_mb.split(",")):
        batch, offsets = make_batch(data, starts, int(size_mb * 1e6))
        nb = len(batch)
        for sub_name in args.substrates.split(","):
            sub = SUBSTRATES[sub_name]
            want = encode_symbols(batch, offsets, sub)
            cpu_ms = 1e3 * timed(lambda: encode_symbols(batch, offsets, sub), args.runs)[0]
            for threads, per_thread in geometries:
                got = kc.encode_symbols_cuda(batch, offsets, sub, threads, per_thread)
                if not all(np.array_equal(g, w) for g, w in zip(got, want)):
                    print(f"MISMATCH against the CPU kernel: {size_mb} MB {sub_name} "
                          f"{threads}x{per_thread}")
                    return 1
                del got

                def h2d():
                    t0 = time.perf_counter()
                    kc.to_device(batch, offsets)
                    cuda.synchronize()
                    return 1e3 * (time.perf_counter() - t0)

                h2d_ms = median_ms(h2d, args.runs)
                with cuda.pinned(batch), cuda.pinned(offsets):
                    pinned_ms = median_ms(h2d, args.runs)
                d_data, d_offs = kc.to_device(batch, offsets)

                passes = []

                def kernels_ms():
                    t = {}
                    kc.encode_on_device(d_data, d_offs, sub, threads, per_thread, timings=t)
                    passes.append(t)
                    return sum(t.values())

                kern_ms = median_ms(kernels_ms, args.runs)
                split = "/".join(f"{statistics.median(t[k] for t in passes[1:]):.3g}"
                                 for k in ("count", "scan", "write"))
                del d_data, d_offs
                total_ms = 1e3 * timed(
                    lambda: kc.encode_symbols_cuda(batch, offsets, sub, threads, per_thread),
                    args.runs)[0]
                gbs = lambda ms: nb / ms / 1e6 if ms > 0 else float("nan")  # noqa: E731
                print(f"{nb / 1e6:7.3g} {len(offsets) - 1:10,} {sub_name:>9} "
                      f"{threads}x{per_thread:<5} {gbs(h2d_ms):8.1f} {gbs(pinned_ms):7.1f} "
                      f"{kern_ms:9.3f} {gbs(kern_ms):9.1f} {total_ms:9.2f} {gbs(total_ms):8.2f} "
                      f"{cpu_ms:8.1f} {gbs(cpu_ms):8.2f} {gbs(kern_ms) / gbs(cpu_ms):7.0f}x "
                      f"{cpu_ms / total_ms:7.1f}x  {split}", flush=True)
    print("\nkernel = count + scan + write passes timed by CUDA events around the launches "
          "(allocations and the one scalar read-back between passes excluded), each pass's median "
          "in the last column; total = "
          "encode_symbols_cuda end to end (pageable copies both ways).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
