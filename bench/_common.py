"""Shared benchmark plumbing: machine banner, corpus loading, median timing."""
import lzma
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_CORPUS = REPO.parent / "shared" / "data" / "corpus"


def banner(title, packages=()):
    """Print what the numbers were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"== {title}")
    print(f"machine: {cpu}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
          f"{platform.system()} {platform.release()}")
    versions = []
    for name in packages:
        try:
            mod = __import__(name)
            versions.append(f"{name} {getattr(mod, '__version__', '?')}")
        except ImportError:
            versions.append(f"{name} (not installed)")
    if versions:
        print("versions: " + ", ".join(versions))


def corpus_lines(max_mb=None):
    """Lines of the shared corpus (``../shared/data/corpus/*.txt.xz``), up to ``max_mb``."""
    files = sorted(SHARED_CORPUS.glob("*.txt.xz"))
    if not files:
        sys.exit(f"benchmark corpus not found: {SHARED_CORPUS}/*.txt.xz")
    lines, size = [], 0
    for path in files:
        with lzma.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                lines.append(line)
                size += len(line.encode("utf-8"))
                if max_mb and size >= max_mb * 1e6:
                    return lines
    return lines


def cpu_seconds(fn):
    """Process CPU seconds of one call of ``fn()`` (for timings paired or taken in turns)."""
    c = time.process_time()
    fn()
    return time.process_time() - c


def timed(fn, runs=5):
    """Median wall and process-CPU seconds of ``runs`` calls of ``fn()`` after one warm-up.

    CPU time is the fair figure on a shared machine; wall time is what a user waits.
    """
    fn()
    wall, cpu = [], []
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


PAGE = os.sysconf("SC_PAGE_SIZE")


def tree_rss(root):
    """Summed RSS (bytes) of process ``root`` and its descendants, found through
    /proc/PID/task/*/children: a few files per sample, not every process on the host (a full
    /proc scan every 50 ms took ~3% of a core from the run it measures)."""
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    pending.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total
