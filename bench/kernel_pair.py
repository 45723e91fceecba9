"""What a second busy core costs the kernel: its CPU time over Parquet files alone, and with a
second process beside it doing the same work on other files, in fresh processes and turns.

    .venv/bin/python bench/kernel_pair.py --tokenizer PATH [--rounds 2] INPUT [INPUT ...]

The inputs are split in two halves (every other file). Each round runs, in turns: every
file in one process, half A alone, half B alone, then A and B at once (two processes, one per
core); each process reports the kernel's CPU seconds (``encode_arrays`` on every row group's
text, reading not counted).
A pure-Python loop is run the same way as a control: work that stays in a core's own caches.
The ratio "beside / alone" is the kernel's CPU cost of sharing the machine with a second
worker, the part of ``--workers 2``'s scaling no scheduling can recover; "halves / one" is
what splitting the work costs by itself (each process's chunk cache learns its half's chunks
anew).
"""
import argparse
import statistics
import subprocess
import sys

import corpustok

from _common import banner, cpu_seconds
from _row_groups import row_group_texts

CONTROL = "python loop"


def kernel_cpu(tokenizer, files):
    """Kernel CPU seconds over every row group's ``text`` of ``files``."""
    tok = corpustok.load(tokenizer)
    tok.encode_batch(["warm the kernels up"])
    return sum(cpu_seconds(lambda: tok.encode_arrays(batch))
               for f in files for batch in row_group_texts(f))


def loop():
    x = 0
    for i in range(3 * 10**7):
        x += i


def child(args):
    print(cpu_seconds(loop) if args.tokenizer == CONTROL else
          kernel_cpu(args.tokenizer, args.inputs))


def launch(tokenizer, files):
    return subprocess.Popen([sys.executable, __file__, "--child", "--tokenizer", tokenizer,
                             *files], stdout=subprocess.PIPE, text=True)


def seconds(procs):
    return [float(p.communicate()[0].split()[-1]) for p in procs]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="*")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    banner("the kernel alone and beside a second worker (CPU seconds)", ["numba", "pyarrow"])
    halves = [args.inputs[0::2], args.inputs[1::2]]
    for name, tok in (("kernel", args.tokenizer), (CONTROL, CONTROL)):
        alone, beside, whole = [], [], []
        for r in range(args.rounds):
            if tok == CONTROL:  # the loop's work is not split: "one process" is one half
                whole.append(seconds([launch(tok, [])])[0] * 2)
            else:
                whole.append(seconds([launch(tok, args.inputs)])[0])
            a = [seconds([launch(tok, h)])[0] for h in halves]
            b = seconds([launch(tok, h) for h in halves])
            alone.append(sum(a))
            beside.append(sum(b))
            print(f"{name} round {r + 1}: one process {whole[-1]:.2f} s, halves alone "
                  f"{a[0]:.2f} + {a[1]:.2f} = {sum(a):.2f} s, beside {b[0]:.2f} + {b[1]:.2f} = "
                  f"{sum(b):.2f} s; halves / one {sum(a) / whole[-1]:.3f}, beside / alone "
                  f"{sum(b) / sum(a):.3f}")
        med = statistics.median
        print(f"{name}: ratios of the medians: halves / one {med(alone) / med(whole):.3f}, "
              f"beside / alone {med(beside) / med(alone):.3f}")


if __name__ == "__main__":
    main()
