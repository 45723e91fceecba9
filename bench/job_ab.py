"""A/B of the whole ``corpustok tokenize`` job between two source trees, in fresh processes.

    .venv/bin/python bench/job_ab.py --a TREE_A --b TREE_B --tokenizer PATH [--rounds 4]
        [--workers 1] INPUT [INPUT ...]

Runs the job (the console script's function, ``--no-progress``) from tree A, then from tree B
(run in each tree's folder with ``PYTHONPATH`` set to it, the same interpreter and
packages), for ``--rounds`` rounds;
prints each run's CPU (user + system, the job's processes together), wall and peak RSS, and
each round's A/B CPU ratio, then the medians. Each tree compiles its own Numba cache on its
first run: run once beforehand (``--rounds 1``) or ignore the first round. Shards go to a
temporary folder that is removed after each run.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

RUN = ("import sys\n"
       "from corpustok.pipeline.cli.entry import run\n"
       "sys.argv = ['corpustok', 'tokenize'] + sys.argv[1:]\n"
       "sys.exit(run())\n")


def one_run(tree, args, out):
    """``(cpu_s, wall_s, peak_rss_mib)`` of one job from ``tree``."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-c", RUN, *map(os.path.abspath, args.inputs), "--tokenizer",
           os.path.abspath(args.tokenizer), "--out", out, "--workers", str(args.workers),
           "--no-progress"]
    # run in the tree: ``python -c`` puts the working folder first on sys.path, before
    # PYTHONPATH, and corpustok is the folder of that name found first
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"the job from {tree} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    shutil.rmtree(out, ignore_errors=True)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, after.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="tree A (the baseline)")
    ap.add_argument("--b", required=True, help="tree B")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("inputs", nargs="+")
    args = ap.parse_args()
    nbytes = sum(os.path.getsize(p) for p in args.inputs)
    print(f"# {' '.join(sys.argv)}")
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}, inputs {nbytes / 1e6:,.1f} MB on disk")
    cpu = {"a": [], "b": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for side in ("a", "b"):
                c, w, rss = one_run(getattr(args, side), args, os.path.join(tmp, "out"))
                cpu[side].append(c)
                print(f"round {r + 1} {side}: CPU {c:7.2f} s  wall {w:7.2f} s  "
                      f"peak RSS {rss:,.0f} MiB (largest child so far)", flush=True)
            print(f"round {r + 1}: A/B CPU {cpu['a'][-1] / cpu['b'][-1]:.3f}", flush=True)
    ratios = [a / b for a, b in zip(cpu["a"], cpu["b"])]
    print(f"median CPU: A {statistics.median(cpu['a']):.2f} s, B {statistics.median(cpu['b']):.2f}"
          f" s; A/B per round {', '.join(f'{x:.3f}' for x in ratios)} "
          f"(median {statistics.median(ratios):.3f}); load average now "
          f"{os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
