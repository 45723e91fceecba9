"""The split alone (``split_batch``: a batch's chunk ends, no BPE), MB a CPU-second, by named
pattern, on documents of Parquet files (ASCII documents and the others apart) and on UDHR
languages; one source tree, or two in turns.

    .venv/bin/python bench/split.py [--patterns cl100k,o200k] [--udhr en,ja,ar,ko]
        [--runs 3] [--tree DIR ...] [--rounds 2] [FILE.parquet ...]

Each tree (default: this repository) runs in a fresh process per round (``PYTHONPATH`` and
folder set to it), the trees in turns; a process compiles or loads its kernels on a few
documents first, then times each input ``--runs`` times and keeps its least CPU time. UDHR
texts (``../shared/data/udhr``, every record of a language, 200 copies so that a language
is several MB) are one batch a language. Prints one line per tree, input and pattern, each
the median of its rounds.
"""
import argparse
import json
import lzma
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import pyarrow.parquet as pq

# PYTHONPATH picks the tree: a child runs with the measured tree's (see main)
from corpustok.kernels.split.fast import split_batch
from corpustok.pretokenize.patterns import program

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UDHR = os.path.join(REPO, "..", "shared", "data", "udhr", "udhr.jsonl.xz")
UDHR_COPIES = 200


def split_inputs(files, langs, copies=UDHR_COPIES, first_docs=None):
    """``(label, list of bytes)`` of each input: each Parquet file's ASCII documents and its
    others (``first_docs``: only the first ones of its first row group), each UDHR language's
    records ``copies`` times. Also ``tools/split_instructions.py``'s inputs."""
    out = []
    for path in files:
        table = pq.read_table(path, columns=["text"]) if first_docs is None else \
            pq.ParquetFile(path).read_row_group(0, columns=["text"]).slice(0, first_docs)
        docs = [s.encode() for s in table.column("text").to_pylist() if s]
        name = os.path.basename(path)
        out.append((f"{name} ASCII documents", [d for d in docs if d.isascii()]))
        out.append((f"{name} other documents", [d for d in docs if not d.isascii()]))
    if langs:
        with lzma.open(UDHR, "rt", encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        for lang in langs:
            docs = [r["text"].encode() for r in rows if r["bcp47"] == lang and r["text"]]
            out.append((f"UDHR {lang}", docs * copies))
    return out


def split_arrays_of(docs):
    """``(data, offsets, ends, chunk_offsets)``: ``split_batch``'s arrays for ``docs``, the
    outputs touched, so that no timed or counted call pays their page faults."""
    offsets = np.zeros(len(docs) + 1, np.int64)
    np.cumsum([len(d) for d in docs], out=offsets[1:])
    data = np.frombuffer(b"".join(docs) + b"\0" * 64, np.uint8)
    ends = np.empty(int(offsets[-1]) + 1, np.int64)
    ends.fill(0)
    return data, offsets, ends, np.zeros(len(offsets), np.int64)


def child(args):
    """Time the split of each input with each pattern; print one JSON line each."""
    for label, docs in split_inputs(args.files, args.udhr):
        data, offsets, ends, chunk_offsets = split_arrays_of(docs)
        for name in args.patterns:
            prog = program(name)
            split_batch(data, offsets[:3], prog, ends, chunk_offsets[:3])  # load or compile
            best = float("inf")
            for _ in range(args.runs):
                t0 = time.process_time()
                split_batch(data, offsets, prog, ends, chunk_offsets)
                best = min(best, time.process_time() - t0)
            print(json.dumps({"input": label, "pattern": name, "bytes": int(offsets[-1]),
                              "cpu_s": best}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--patterns", default="cl100k,o200k")
    ap.add_argument("--udhr", default="", help="UDHR languages (bcp47), comma-separated")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tree", action="append", help="a source tree (repeat for several)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    args.patterns = args.patterns.split(",")
    args.udhr = [x for x in args.udhr.split(",") if x]
    if args.child:
        return child(args)
    trees = args.tree or [REPO]
    print(f"# {' '.join(sys.argv)}")
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--patterns",
           ",".join(args.patterns), "--udhr", ",".join(args.udhr), "--runs", str(args.runs),
           *map(os.path.abspath, args.files)]
    times = {}  # (tree, input, pattern) -> [cpu_s], and the bytes
    for r in range(args.rounds):
        for tree in (trees if r % 2 == 0 else trees[::-1]):
            env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
            done = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"the run from {tree} failed:\n{done.stderr[-2000:]}")
            for line in done.stdout.splitlines():
                row = json.loads(line)
                key = (tree, row["input"], row["pattern"])
                times.setdefault(key, [row["bytes"]]).append(row["cpu_s"])
    for (tree, label, name), (nbytes, *cpu) in times.items():
        s = statistics.median(cpu)
        print(f"{tree}  {label} ({nbytes / 1e6:.1f} MB)  {name}: {nbytes / s / 1e6:.0f} MB per "
              f"CPU-second (median of {len(cpu)} rounds)")


if __name__ == "__main__":
    main()
