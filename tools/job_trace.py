"""Where a tokenize job's time goes, step by step and thread by thread: a timeline of one run.

    .venv/bin/python tools/job_trace.py [--events] tokenize INPUT ... --tokenizer T --out DIR
        [--workers 2] [any other option of the command]

Runs the console script's job in this process (the same start-up as ``corpustok``: its
environment defaults, paused collector, skipped packages) with the job's three steps
(``ReadUnit``, ``Tokenize``, ``WriteShard``) and the workers' ``setup`` timed: each call's
start (seconds since this script started), wall time and the thread's CPU time. Local
threads only (the default local mode): steps that run in worker processes or on Dask are not
seen. Prints, after the job's own summary, when the first worker began and the last step
ended, and each step's total CPU; ``--events`` lists every call too.

What it answers: how long the serial start is before any worker begins (the part two workers
cannot share), how evenly the workers' units end, and how a shard's CPU splits between
reading, the kernel and writing.
"""
import collections
import sys
import threading
import time

T0 = time.time()
# One timed call: its step, the thread it ran on, when it began (seconds after T0), its wall
# and thread CPU seconds.
Call = collections.namedtuple("Call", "label thread start wall cpu")


def _timed(cls, name, log, label):
    """Replace ``cls.name`` by a wrapper that logs each call (a generator: the time spent
    in each of its steps) to ``log``."""
    inner = getattr(cls, name)

    def call(self, *args, **kwargs):
        start, cpu = time.time(), time.thread_time()
        out = inner(self, *args, **kwargs)
        if not hasattr(out, "__next__"):
            _record(log, label, start, cpu)
            return out
        return _timed_steps(out, log, label)

    setattr(cls, name, call)


def _timed_steps(gen, log, label):
    """The items of ``gen``, each ``next`` timed as one call of ``label``; the time the
    consumer spends between items is not counted."""
    while True:
        start, cpu = time.time(), time.thread_time()
        try:
            item = next(gen)
        except StopIteration:
            return
        _record(log, label, start, cpu)
        yield item


def _record(log, label, start, cpu):
    """Log a call of ``label`` that began at ``start`` (``time.time()``) with the thread's
    CPU clock at ``cpu``, ending now."""
    log.append(Call(label, threading.get_ident(), start - T0, time.time() - start,
                    time.thread_time() - cpu))


def main(argv):
    events = "--events" in argv
    argv = [a for a in argv if a != "--events"]
    # here: after T0, so that the imports count in the timeline as they do in a job
    from corpustok.pipeline.runtime.workers import quiet_optional_deps
    quiet_optional_deps()  # before Beam loads (transforms below), as the command does
    from corpustok.pipeline.cli.entry import run
    from corpustok.pipeline.runtime import transforms

    log = []
    _timed(transforms.ShardUnits, "setup", log, "setup")
    for cls, label in ((transforms.ReadUnit, "read"), (transforms.Tokenize, "tokenize"),
                       (transforms.WriteShard, "write")):
        _timed(cls, "process", log, label)
    sys.argv = ["corpustok", *argv]
    code = run()
    end = time.time() - T0
    threads = {t: k for k, t in enumerate(dict.fromkeys(c.thread for c in log))}
    if events:
        for c in sorted(log, key=lambda c: c.start):
            print(f"{c.start:8.2f} s  worker {threads[c.thread]}  {c.label:8s}  "
                  f"wall {c.wall:6.2f} s  CPU {c.cpu:6.2f} s")
    steps = [c for c in log if c.label != "setup"]
    if not steps:
        print("no step ran in this process (worker processes or another runner?)")
        return code
    first = min(c.start for c in log)
    print(f"first worker began at {first:.2f} s; the last step ended at "
          f"{max(c.start + c.wall for c in steps):.2f} s; the job returned at {end:.2f} s")
    for t, k in threads.items():
        mine = [c for c in steps if c.thread == t]
        if mine:
            print(f"worker {k}: {len(mine)} calls, last ended at "
                  f"{max(c.start + c.wall for c in mine):.2f} s, "
                  f"CPU {sum(c.cpu for c in mine):.2f} s")
    total = collections.defaultdict(float)
    for c in steps:
        total[c.label] += c.cpu
    print("CPU by step: " + ", ".join(f"{k} {v:.2f} s" for k, v in total.items()))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
