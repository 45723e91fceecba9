"""The same tokenize job three ways: local disk (FnApiRunner), through an S3 store (SeaweedFS on
127.0.0.1, tests/store.py: inputs, tokenizer and output all ``s3://``), and on a Dask cluster
of a scheduler and 2 worker processes (their own folders, the job given ``s3://`` paths only).

    .venv/bin/python bench/store.py [--docs 3000] [--runs 2]

Input: the first ``--docs`` documents of ``../shared/data/corpus-b/part-00000.parquet``
(written locally in row groups of 250 documents, then uploaded), GPT-2, ``--shard-mb 2``,
one local worker. Wall: the ``corpustok tokenize`` command, start to exit (Python start-up,
Beam, the kernels cached). CPU: the command's process tree, plus for the cluster the
scheduler's and workers' CPU over the run (psutil); the store server's CPU is given apart.
Each run writes a new output folder; the median of ``--runs`` is printed.
"""
import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.store import free_ports, start_store, stop_store  # noqa: E402  the tests' SeaweedFS

from _common import REPO, banner  # noqa: E402

CORPUS_B = REPO.parent / "shared" / "data" / "corpus-b" / "part-00000.parquet"


def cli(args, extra_env=None):
    """Wall and CPU seconds (this child's tree) of one ``corpustok tokenize`` command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pipeline.cli", "tokenize", *args,
                        "--no-progress"], cwd=REPO, capture_output=True,
                       env={**os.environ, "PYTHONPATH": str(REPO), **(extra_env or {})})
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(args)}\n{p.stderr.decode()[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def proc_cpu(procs):
    total = 0.0
    for p in procs:
        try:
            t = psutil.Process(p.pid).cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.NoSuchProcess:
            pass
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=2)
    a = ap.parse_args()
    banner("tokenize: local disk vs an S3 store vs a 2-worker Dask cluster on it",
           ["apache_beam", "distributed", "boto3", "pyarrow"])
    work = Path(tempfile.mkdtemp(prefix="bench-store-"))
    table = pq.ParquetFile(CORPUS_B).read_row_group(0).slice(0, a.docs).select(["id", "text"])
    text_mb = sum(len(t.as_py().encode()) for t in table.column("text")) / 1e6
    src = work / "in" / "docs.parquet"
    src.parent.mkdir()
    pq.write_table(table, src, row_group_size=250)
    from corpustok import BytePairTokenizer
    tok = work / "gpt2.json"
    BytePairTokenizer.from_hf(REPO / "tests" / "data" / "gpt2" / "vocab.json",
                              REPO / "tests" / "data" / "gpt2" / "merges.txt").save(str(tok))
    print(f"input: {a.docs} documents of corpus-b, {text_mb:.1f} MB of text, "
          f"{src.stat().st_size / 1e6:.1f} MB of Parquet; --shard-mb 2, --workers 1 "
          f"(local, store), 2 Dask workers of 1 thread")
    store = start_store(work / "store")
    procs = []
    try:
        store.upload(work / "in", "bench/in")
        store.put("bench/tok/gpt2.json", tok.read_bytes())
        common = ["--shard-mb", "2", "--eos", "<|endoftext|>"]
        s3 = [f"{store.root}/bench/in/docs.parquet", "--tokenizer",
              f"{store.root}/bench/tok/gpt2.json", *common, *store.beam_args]
        # the cluster
        port, = free_ports(1)
        address = f"tcp://127.0.0.1:{port}"
        dask = Path(sys.executable).parent / "dask"
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        for name, args in [("scheduler", ["scheduler", "--host", "127.0.0.1", "--port",
                                          str(port), "--no-dashboard"])] + \
                [(f"worker{i}", ["worker", address, "--nthreads", "1", "--no-nanny",
                                 "--no-dashboard"]) for i in range(2)]:
            home = work / name
            home.mkdir()
            procs.append(subprocess.Popen(
                [str(dask), *args], cwd=home, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True,
                env={**env, "HOME": str(home), "PYTHONPATH": str(REPO), "PYTHONSAFEPATH": "1"}))
        from distributed import Client
        with Client(address, timeout=60) as c:
            c.wait_for_workers(2, timeout=60)
        cli([str(src), "--tokenizer", str(tok), *common, "--out", str(work / "warm"),
             "--workers", "1"])  # the kernels compiled and cached before any timing
        rows = {}
        for run in range(a.runs):
            for name, args in [
                    ("local disk", [str(src), "--tokenizer", str(tok), *common, "--out",
                                    str(work / f"out-local-{run}"), "--workers", "1"]),
                    ("S3 store", [*s3, "--out", f"{store.root}/bench/out-s3-{run}",
                                  "--workers", "1"]),
                    ("2-worker Dask on S3", [*s3, "--out", f"{store.root}/bench/out-dask-{run}",
                                             "--runner", "dask", "--dask-address", address])]:
                server0, cluster0 = proc_cpu([store.process]), proc_cpu(procs)
                wall, cpu = cli(args)
                server = proc_cpu([store.process]) - server0
                workers = proc_cpu(procs) - cluster0 if "Dask" in name else 0.0
                rows.setdefault(name, []).append((wall, cpu + workers, server))
        print("\n| run | wall s | MB/s (wall) | CPU s (driver + cluster) | store server CPU s |")
        print("|---|---|---|---|---|")
        for name, got in rows.items():
            wall = statistics.median(g[0] for g in got)
            cpu = statistics.median(g[1] for g in got)
            server = statistics.median(g[2] for g in got)
            print(f"| {name} | {wall:.1f} | {text_mb / wall:.2f} | {cpu:.1f} | {server:.1f} |")
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:  # a worker still looking for its scheduler
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        stop_store(store)


if __name__ == "__main__":
    main()
