"""A/B of a tokenizer's kernel between two source trees, in fresh processes, in turns.

    .venv/bin/python bench/kernel_ab.py --a TREE_A --b TREE_B --tokenizer PATH [--rounds 6]
        [--reps 2] [--mb MB] INPUT [INPUT ...]

Each round runs one process from tree A and one from tree B (which goes first alternates),
each in its tree's folder with ``PYTHONPATH`` set to it. A process reads the ``text`` column
of the Parquet INPUTs row group by row group (the first ``--mb`` MB of documents only, as one
batch, when given), warms the kernels up, then encodes every batch ``--reps`` times, each time
through a new chunk cache (so each rep meets the text as a job's first pass does), and reports
the least CPU time of its reps in ns a byte: reading is not timed. Prints each round's A/B
ratio and the medians. Both trees compile their Numba cache on their first run, before their
timed window; on a machine whose speed drifts within minutes, read the per-round ratios.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

RESULT = re.compile(r"^kernel_ab: ([\d.]+) ns/B over (\d+) bytes$", re.M)


def child(args):
    """The timed process: encode the inputs ``--reps`` times, print the best ns a byte."""
    # here, not at the top: the package measured is the tree's (this process's PYTHONPATH),
    # and the driver, which runs both trees, loads neither
    sys.path.insert(0, os.path.join(os.getcwd(), "bench"))
    import corpustok
    from _row_groups import leading_batch, new_chunk_cache, row_group_texts, text_bytes

    tok = corpustok.load(args.tokenizer)
    batches = ([leading_batch(args.inputs, args.mb)] if args.mb else
               [b for f in args.inputs for b in row_group_texts(f)])
    tok.encode_batch(["warm the kernels up"])
    best = float("inf")
    for _ in range(args.reps):
        new_chunk_cache(tok)
        t0 = time.process_time()
        for batch in batches:
            tok.encode_arrays(batch)
        best = min(best, time.process_time() - t0)
    nbytes = sum(text_bytes(b) for b in batches)
    print(f"kernel_ab: {best / nbytes * 1e9:.4f} ns/B over {nbytes} bytes")


def one_run(tree, args):
    """``(ns_per_byte, bytes)`` of one process from ``tree``."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--tokenizer",
           os.path.abspath(args.tokenizer), "--reps", str(args.reps), "--mb", str(args.mb or 0),
           *map(os.path.abspath, args.inputs)]
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
    done = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True)
    m = RESULT.search(done.stdout)
    if done.returncode or not m:
        sys.exit(f"the kernel run from {tree} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return float(m.group(1)), int(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", help="tree A (the baseline)")
    ap.add_argument("--b", help="tree B")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--mb", type=float, help="only the first MB MB of documents, as one batch")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("inputs", nargs="+")
    args = ap.parse_args()
    if args.child:
        return child(args)
    if not (args.a and args.b):
        ap.error("--a and --b are required")
    print(f"# {' '.join(sys.argv)}")
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}")
    ns = {"a": [], "b": []}
    for r in range(args.rounds):
        for side in ("a", "b") if r % 2 == 0 else ("b", "a"):
            value, nbytes = one_run(getattr(args, side), args)
            ns[side].append(value)
        print(f"round {r + 1}: A {ns['a'][-1]:.3f} ns/B, B {ns['b'][-1]:.3f} ns/B, "
              f"A/B {ns['a'][-1] / ns['b'][-1]:.3f} ({nbytes / 1e6:,.1f} MB)", flush=True)
    ratios = [a / b for a, b in zip(ns["a"], ns["b"])]
    print(f"median: A {statistics.median(ns['a']):.3f} ns/B, B {statistics.median(ns['b']):.3f} "
          f"ns/B; A/B per round {', '.join(f'{x:.3f}' for x in ratios)} (median "
          f"{statistics.median(ratios):.3f}); load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
