"""A/B of the whole ``corpustok tokenize`` job between two source trees, in fresh processes.

    .venv/bin/python bench/job_ab.py --a TREE_A --b TREE_B --tokenizer PATH [--rounds 4]
        [--workers 1] [--a-env KEY=VALUE ...] [--b-env KEY=VALUE ...] INPUT [INPUT ...]

Runs the job (the console script's function, ``--no-progress``) from tree A, then from tree B
(run in each tree's folder with ``PYTHONPATH`` set to it, the same interpreter and
packages, and each side's ``--a-env``/``--b-env`` variables set: the same tree twice with two
environments is an A/B of a setting), for ``--rounds`` rounds;
prints each run's CPU (user + system, and the system part: the OS's own work, page faults
included, the job's processes together), wall and peak RSS, and
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


def one_run(tree, args, out, extra_env):
    """``(cpu_s, sys_s, wall_s, peak_rss_mib)`` of one job from ``tree``, with the variables
    ``extra_env`` (a dict) set."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-c", RUN, *map(os.path.abspath, args.inputs), "--tokenizer",
           os.path.abspath(args.tokenizer), "--out", out, "--workers", str(args.workers),
           "--no-progress"]
    # run in the tree: ``python -c`` puts the working folder first on sys.path, before
    # PYTHONPATH, and corpustok is the folder of that name found first
    env = {**os.environ, **extra_env, "PYTHONPATH": os.path.abspath(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"the job from {tree} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    shutil.rmtree(out, ignore_errors=True)
    system = after.ru_stime - before.ru_stime
    return after.ru_utime - before.ru_utime + system, system, wall, after.ru_maxrss / 1024


def env_pairs(items):
    """``--a-env``/``--b-env`` values ``KEY=VALUE`` as a dict."""
    env = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            sys.exit(f"job_ab: expected KEY=VALUE, got {item!r}")
        env[key] = value
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="tree A (the baseline)")
    ap.add_argument("--b", required=True, help="tree B")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--a-env", action="append", default=[], metavar="KEY=VALUE",
                    help="a variable set for tree A's runs (repeatable)")
    ap.add_argument("--b-env", action="append", default=[], metavar="KEY=VALUE",
                    help="a variable set for tree B's runs (repeatable)")
    ap.add_argument("inputs", nargs="+")
    args = ap.parse_args()
    nbytes = sum(os.path.getsize(p) for p in args.inputs)
    print(f"# {' '.join(sys.argv)}")
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}, inputs {nbytes / 1e6:,.1f} MB on disk")
    envs = {"a": env_pairs(args.a_env), "b": env_pairs(args.b_env)}
    cpu = {"a": [], "b": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for side in ("a", "b"):
                c, system, w, rss = one_run(getattr(args, side), args, os.path.join(tmp, "out"),
                                            envs[side])
                cpu[side].append(c)
                print(f"round {r + 1} {side}: CPU {c:7.2f} s (system {system:5.2f})  "
                      f"wall {w:7.2f} s  "
                      f"peak RSS {rss:,.0f} MiB (largest child so far)", flush=True)
            print(f"round {r + 1}: A/B CPU {cpu['a'][-1] / cpu['b'][-1]:.3f}", flush=True)
    ratios = [a / b for a, b in zip(cpu["a"], cpu["b"])]
    print(f"median CPU: A {statistics.median(cpu['a']):.2f} s, B {statistics.median(cpu['b']):.2f}"
          f" s; A/B per round {', '.join(f'{x:.3f}' for x in ratios)} "
          f"(median {statistics.median(ratios):.3f}); load average now "
          f"{os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
