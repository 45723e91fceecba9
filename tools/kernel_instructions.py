"""Instructions a tokenizer's kernel executes on the first MB of a Parquet file, counted by
Valgrind's callgrind: a number that does not move with the machine's load, for comparing two
source trees where timings drift by more than the change (decision 0017).

    .venv/bin/python tools/kernel_instructions.py --tokenizer PATH [--tree DIR] [--mb 2] FILE

The child process runs under ``valgrind --tool=callgrind`` with instrumentation off until the
timed call: it loads the tokenizer from ``--tree`` (its ``PYTHONPATH``, default this
repository), reads the first ``--mb`` MB of documents of FILE, warms the
kernels up, then counts only ``encode_arrays`` on that batch through a new chunk cache (a
job's first pass). Instrumentation is switched by callgrind's client requests from a small C
library compiled here (needs ``gcc`` and Valgrind's headers). Slow: a few minutes a run, most
of it Python and Numba starting under Valgrind.
"""
import argparse
import ctypes
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONTROL_C = r"""
#include <valgrind/callgrind.h>
void count_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION;
                         CALLGRIND_TOGGLE_COLLECT; }
void count_stop(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS;
                        CALLGRIND_STOP_INSTRUMENTATION; }
"""


def child(args):
    """The counted process (under Valgrind)."""
    # here, not at the top: the package counted is the tree's (this process's PYTHONPATH);
    # the driver loads neither it nor pyarrow
    sys.path.insert(0, os.path.join(REPO, "bench"))
    import corpustok
    from _row_groups import leading_batch, new_chunk_cache, text_bytes

    control = ctypes.CDLL(args.control)
    tok = corpustok.load(args.tokenizer)
    batch = leading_batch([args.file], args.mb)
    tok.encode_batch(["warm the kernels up"])
    new_chunk_cache(tok)
    control.count_start()
    tok.encode_arrays(batch)
    control.count_stop()
    print(f"kernel_instructions: bytes {text_bytes(batch)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--tree", default=REPO)
    ap.add_argument("--mb", type=float, default=2)
    ap.add_argument("--control", help=argparse.SUPPRESS)
    ap.add_argument("file")
    args = ap.parse_args()
    if args.control:
        return child(args)
    with tempfile.TemporaryDirectory() as tmp:
        src, lib = os.path.join(tmp, "control.c"), os.path.join(tmp, "libcontrol.so")
        with open(src, "w") as f:
            f.write(CONTROL_C)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", lib, src], check=True)
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
               f"--callgrind-out-file={os.path.join(tmp, 'callgrind.out')}", sys.executable,
               os.path.abspath(__file__), "--control", lib, "--tokenizer",
               os.path.abspath(args.tokenizer), "--mb", str(args.mb), os.path.abspath(args.file)]
        env = {**os.environ, "PYTHONPATH": os.path.abspath(args.tree)}
        done = subprocess.run(cmd, env=env, cwd=args.tree, capture_output=True, text=True)
    counted = re.search(r"Collected : (\d+)", done.stderr)
    nbytes = re.search(r"kernel_instructions: bytes (\d+)", done.stdout)
    if done.returncode or not (counted and nbytes):
        sys.exit(f"the counted run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    n, b = int(counted.group(1)), int(nbytes.group(1))
    print(f"{args.tree}: {n:,} instructions over {b:,} bytes ({n / b:.2f} a byte)")


if __name__ == "__main__":
    main()
