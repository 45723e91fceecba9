"""Instructions the split alone (``split_batch``) executes a byte, counted by Valgrind's
callgrind, per named pattern, on UDHR languages and on the first documents of a Parquet file
(ASCII documents and the others apart; ``bench/split.py``'s inputs): a number that does not move with the machine's load,
for comparing source trees (``bench/split.py`` times the same inputs).

    .venv/bin/python tools/split_instructions.py [--tree DIR ...] [--patterns cl100k,o200k]
        [--udhr en,ja,th] [--docs 600] [FILE.parquet]

Each tree (default: this repository) runs once without Valgrind (to fill its Numba cache),
then once under ``valgrind --tool=callgrind`` with instrumentation on only around each
``split_batch`` call (client requests from a small C library compiled here: needs ``gcc``
and Valgrind's headers). UDHR texts are every record of a language, once. Prints a table: one
row per input and pattern, one column per tree.
"""
import argparse
import ctypes
import glob
import os
import re
import subprocess
import sys
import tempfile

# PYTHONPATH picks the tree: a counted child runs with its tree's (see counts)
from corpustok.kernels.split.fast import split_batch
from corpustok.pretokenize.patterns import program

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
from split import split_arrays_of, split_inputs  # noqa: E402  (bench/split.py's inputs)

CONTROL_C = r"""
#include <valgrind/callgrind.h>
void count_start(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_ZERO_STATS;
                         CALLGRIND_TOGGLE_COLLECT; }
void count_stop(const char *label) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS_AT(label);
                                     CALLGRIND_STOP_INSTRUMENTATION; }
"""
TRIGGER = re.compile(r"^desc: Trigger: Client Request: (.*)$", re.M)
TOTAL = re.compile(r"^(?:summary|totals): (\d+)", re.M)


def child(args):
    """The counted process: one dump per input and pattern, labelled input|pattern|bytes."""
    control = ctypes.CDLL(args.control) if args.control != "-" else None
    langs = [x for x in args.udhr.split(",") if x]
    for label, docs in split_inputs([args.file] if args.file else [], langs, copies=1,
                                    first_docs=args.docs):
        data, offsets, ends, chunk_offsets = split_arrays_of(docs)
        for name in args.patterns.split(","):
            prog = program(name)
            split_batch(data, offsets[:2], prog, ends, chunk_offsets[:2])  # load or compile
            if control:
                control.count_start()
            split_batch(data, offsets, prog, ends, chunk_offsets)
            if control:
                control.count_stop(f"{label}|{name}|{offsets[-1]}".encode())


def counts(tree, args, tmp):
    """``{(input, pattern): instructions a byte}`` of one tree."""
    out = os.path.join(tmp, os.path.basename(os.path.abspath(tree)) + ".cg")
    base = [sys.executable, os.path.abspath(__file__), "--patterns", args.patterns,
            "--udhr", args.udhr, "--docs", str(args.docs)]
    if args.file:
        base.append(os.path.abspath(args.file))
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
    subprocess.run([*base, "--control", "-"], env=env, cwd=tree, check=True,
                   capture_output=True)  # fills the tree's Numba cache
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
           f"--callgrind-out-file={out}", *base, "--control", args.control_lib]
    done = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"the counted run from {tree} failed:\n{done.stderr[-2000:]}")
    result = {}
    for path in glob.glob(out + ".*"):
        text = open(path).read()
        trigger, total = TRIGGER.search(text), TOTAL.search(text)
        if trigger and total:
            label, name, nbytes = trigger.group(1).strip().split("|")
            result[(label, name)] = int(total.group(1)) / max(1, int(nbytes))
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append")
    ap.add_argument("--patterns", default="cl100k,o200k")
    ap.add_argument("--udhr", default="en,ja,th")
    ap.add_argument("--docs", type=int, default=600, help="documents of FILE's first row group")
    ap.add_argument("--control", help=argparse.SUPPRESS)
    ap.add_argument("file", nargs="?")
    args = ap.parse_args()
    if args.control:
        return child(args)
    trees = args.tree or [REPO]
    with tempfile.TemporaryDirectory() as tmp:
        src, lib = os.path.join(tmp, "control.c"), os.path.join(tmp, "libcontrol.so")
        with open(src, "w") as f:
            f.write(CONTROL_C)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", lib, src], check=True)
        args.control_lib = lib
        table = [counts(tree, args, tmp) for tree in trees]
    print(f"# {' '.join(sys.argv)}")
    print("input, pattern: instructions a byte in " + ", ".join(trees))
    for key in sorted(set().union(*table)):
        print(f"{key[0]:>36} {key[1]:>7}: " +
              "  ".join(f"{t[key]:7.2f}" if key in t else "      -" for t in table))


if __name__ == "__main__":
    main()
