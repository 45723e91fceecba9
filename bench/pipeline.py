"""Pipeline throughput and memory: Parquet in, token shards out, against the kernel alone.

Builds Parquet corpora of about 100 MB and 1 GB of text from the shared corpus (documents of
~4 KB cut at line ends, repeated to size, row groups of ~8 MB), then for each size runs
``corpustok.pipeline.jobs.tokenize.tokenize`` in each mode of ``--modes`` (one in-process worker,
two worker processes, two threads, one worker with two kernel threads, Beam's DaskRunner on
two Dask worker processes; the modes take turns), each run in a fresh subprocess, and reports the median wall time of ``--runs`` runs,
MB/s of input text and the peak RSS of the whole process tree (driver and workers, sampled
every 100 ms), and the CPU ms of each step a worker runs per shard. Besides the whole run (Beam and worker start-up included), it
reports the steady state: text MB of the shards finished after every worker has finished one,
over the time from then to the last shard (from the shard entries' modification times). The
kernel's own speed is ``encode_arrays`` on the same tables in one process, one core. Targets
(issue 4): 2 workers >= 70% of 2x the kernel speed; peak RSS flat in input size.

    .venv/bin/python bench/pipeline.py [--tokenizer FILE] [--sizes 100,1000] [--runs 3]
                                       [--modes 1,2p,2t,1x2t,2d] [--runner dask]

The default tokenizer is GPT-2 byte-level BPE (the kernel-bound case: ~30 MB/s per core).
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import corpustok
from corpustok.pipeline.output.layout import entry_names, entry_path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import tree_rss  # noqa: E402
from _row_groups import row_group_texts  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GPT2 = os.path.join(HERE, "..", "tests", "data", "gpt2")
DOC_BYTES = 4096
ROW_GROUP_BYTES = 8 << 20


def corpus_documents():
    """Documents of ~DOC_BYTES cut at line ends from every shared corpus file."""
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    from conftest import read_xz_text, shared_corpus_files
    docs = []
    for path in shared_corpus_files():
        text = read_xz_text(path)
        i = 0
        while i < len(text):
            j = text.find("\n", i + DOC_BYTES)
            j = len(text) if j < 0 else j + 1
            docs.append(text[i:j])
            i = j
    if not docs:
        sys.exit("bench/pipeline.py needs ../shared/data/corpus")
    return docs


def build_input(folder, megabytes, docs):
    """One Parquet file of ~``megabytes`` MB of text (row groups of ~ROW_GROUP_BYTES)."""
    path = os.path.join(folder, f"corpus-{megabytes}MB.parquet")
    if os.path.exists(path):
        return path
    sizes = np.array([len(d.encode()) for d in docs])
    target = megabytes * 1_000_000
    reps = int(np.ceil(target / sizes.sum()))
    per_group = max(1, int(ROW_GROUP_BYTES / sizes.mean()))
    tmp = path + ".tmp"
    with pq.ParquetWriter(tmp, pa.schema([("id", pa.int64()), ("text", pa.string())]),
                          compression="zstd") as w:
        written = row = 0
        for _ in range(reps):
            for a in range(0, len(docs), per_group):
                chunk = docs[a:a + per_group]
                if written >= target:
                    break
                w.write_table(pa.table({"id": pa.array(range(row, row + len(chunk)), pa.int64()),
                                        "text": chunk}), row_group_size=len(chunk))
                row += len(chunk)
                written += int(sizes[a:a + per_group].sum())
    os.replace(tmp, path)
    return path


def kernel_mbps(tokenizer, path, runs):
    """Median MB/s of ``encode_arrays`` over the file's row groups, one process."""
    tok = corpustok.load(tokenizer)
    groups = list(row_group_texts(path, 12))
    nbytes = sum(int(b.offsets[-1] - b.offsets[0]) for b in groups)
    tok.encode_arrays(groups[0])  # compile / warm
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for b in groups:
            tok.encode_arrays(b)
        times.append(time.perf_counter() - t0)
    return nbytes / 1e6 / statistics.median(times)


def shard_stages(tokenizer, path, shards=12):
    """CPU ms per shard of each step a worker runs, without Beam, over the first ``shards``
    shards: read (Parquet row group to a DocBatch), the kernel (``encode_arrays``), the rest
    of ``tokenize_batch`` (markers, input checksum, the token table) and ``write_shard``. The
    kernel runs on a second tokenizer that sees the same shards, so both caches match."""
    import corpustok
    from corpustok.arrow import one_array, utf8_batch
    from corpustok.pipeline.read.units import read_documents
    from corpustok.pipeline.output.shards import write_shard
    from corpustok.pipeline.encode import tokenize_batch
    tok, alone = corpustok.load(tokenizer), corpustok.load(tokenizer)
    spent = dict.fromkeys(("read", "kernel", "tokenize_batch glue", "write"), 0.0)
    out = tempfile.mkdtemp(prefix="corpustok-stages-")
    docs = read_documents(path)
    for _ in range(shards):
        c = time.process_time()
        batch = next(docs)
        spent["read"] += time.process_time() - c
        texts = utf8_batch(one_array(batch.table.column("text")))
        c = time.process_time()
        alone.encode_arrays(texts)
        kernel = time.process_time() - c
        spent["kernel"] += kernel
        c = time.process_time()
        tb = tokenize_batch(tok, batch)
        spent["tokenize_batch glue"] += time.process_time() - c - kernel
        c = time.process_time()
        write_shard(out, tb, "0" * 64, "0" * 16)
        spent["write"] += time.process_time() - c
    shutil.rmtree(out)
    return {k: 1e3 * v / shards for k, v in spent.items()}


def steady_mbps(out, workers):
    """Text MB/s between the ``workers``-th and the last shard entry written in ``out``."""
    entries = []
    for name in entry_names(out):
        path = entry_path(out, name)
        with open(path, encoding="utf-8") as fh:
            entries.append((os.path.getmtime(path), json.load(fh)["bytes"]))
    entries.sort()
    if len(entries) <= workers:
        return float("nan")
    span = entries[-1][0] - entries[workers - 1][0]
    return sum(b for _, b in entries[workers:]) / 1e6 / span


# Modes: (workers, local_mode, kernel threads per batch, Beam arguments); "threads" is Beam's
# multi_threading mode, two bundles at a time in one process; "2d" is Beam's DaskRunner on a
# local dask.distributed cluster of 2 worker processes (local_mode does not apply).
MODES = {"1": (1, "threads", 1, []), "2p": (2, "processes", 1, []),
         "1x2t": (1, "threads", 2, []), "2t": (2, "threads", 1, []),
         "2d": (2, "threads", 1, ["--runner", "dask"])}


def run_child(tokenizer, path, out, mode):
    """Run the pipeline in a child process in local ``mode`` (a :data:`MODES` key); returns
    (seconds, peak tree RSS bytes, text bytes, steady-state MB/s)."""
    workers, local_mode, threads, beam_args = MODES[mode]
    code = ("import json, sys\n"
            "from corpustok.pipeline.runtime.workers import process_env_defaults\n"
            "process_env_defaults()  # as the corpustok command does\n"
            "from corpustok.pipeline.jobs.tokenize import tokenize\n"
            "w, m, t, b = json.loads(sys.argv[4])\n"
            "if __name__ == '__main__':  # Dask's worker processes import this module\n"
            "    r = tokenize([sys.argv[1]], sys.argv[2], sys.argv[3], workers=w, "
            "local_mode=m, threads=t, beam_args=b)\n"
            "    t = r.times  # from the output folder's claim on: as before the warm-up\n"
            "    print(json.dumps({'ok': r.ok, 'bytes': r.manifest['totals']['bytes'], "
            "'seconds': t.total - t.preparing - t.compiling}))\n")
    shutil.rmtree(out, ignore_errors=True)
    proc = subprocess.Popen([sys.executable, "-c", code, path, out, tokenizer,
                             json.dumps([workers, local_mode, threads, beam_args])],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True, text=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        time.sleep(0.1)
    res = json.loads(proc.stdout.read().strip().splitlines()[-1])
    if proc.returncode or not res["ok"]:
        sys.exit(f"pipeline run failed: {res}")
    return res["seconds"], peak, res["bytes"], steady_mbps(out, workers)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer",
                    help="tokenizer file (default: GPT-2 BPE from tests/data/gpt2, saved as a "
                    "corpustok file in --work; e.g. ../shared/data/vocab/bert-base-uncased/"
                    "vocab.txt for WordPiece)")
    ap.add_argument("--sizes", default="100,1000", help="input sizes in MB")
    ap.add_argument("--runs", type=int, default=3, help="runs per configuration (median)")
    ap.add_argument("--modes", default=None,
                    help="modes, comma-separated: 1 (one worker in-process), 2p (2 worker "
                    "processes), 1x2t (one worker, 2 kernel threads a batch), 2t (Beam's "
                    "multi_threading, 2 bundles at once), 2d (Beam's DaskRunner, 2 worker "
                    "processes); run in turns, one run of each a round (default: 1,2t)")
    ap.add_argument("--runner", choices=("fnapi", "dask"), default="fnapi",
                    help="dask: the default modes become 2t,2d (the FnApiRunner's threads "
                    "beside Dask)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "corpustok-bench"),
                    help="folder for the generated inputs and outputs")
    args = ap.parse_args()
    import apache_beam
    import numba
    os.makedirs(args.work, exist_ok=True)
    if args.tokenizer is None:
        import corpustok
        args.tokenizer = os.path.join(args.work, "gpt2.json")
        corpustok.BytePairTokenizer.from_hf(os.path.join(GPT2, "vocab.json"),
                                            os.path.join(GPT2, "merges.txt")).save(args.tokenizer)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}")
    print(f"python {platform.python_version()}, numba {numba.__version__}, pyarrow "
          f"{pa.__version__}, apache-beam {apache_beam.__version__}")
    modes = (args.modes or ("2t,2d" if args.runner == "dask" else "1,2t")).split(",")
    for m in modes:
        if m not in MODES:
            sys.exit(f"unknown mode {m!r}: one of {', '.join(MODES)}")
    print(f"tokenizer: {args.tokenizer}; median of {args.runs} runs, modes in turns; "
          "FnApiRunner but for 2d (DaskRunner)")
    docs = corpus_documents()
    rows = []
    for mb in (int(s) for s in args.sizes.split(",")):
        path = build_input(args.work, mb, docs)
        kern = kernel_mbps(args.tokenizer, path, args.runs)
        stages = shard_stages(args.tokenizer, path)
        print(f"  {mb} MB: CPU ms per shard, one worker without Beam: " +
              ", ".join(f"{k} {v:.0f}" for k, v in stages.items()), flush=True)
        results = {m: [] for m in modes}
        for _ in range(args.runs):
            for m in modes:
                results[m].append(run_child(args.tokenizer, path,
                                            os.path.join(args.work, "out"), m))
        for m in modes:
            res = results[m]
            secs = statistics.median(r[0] for r in res)
            peak = max(r[1] for r in res)
            steady = statistics.median(r[3] for r in res)
            mbps = res[0][2] / 1e6 / secs
            rows.append((mb, res[0][2] / 1e6, m, secs, mbps, steady, kern, peak / 2**20))
            print(f"  {mb} MB, mode {m}: {secs:.1f} s, {mbps:.1f} MB/s "
                  f"({steady:.1f} MB/s steady), peak RSS {peak / 2**20:,.0f} MiB", flush=True)
    print()
    print("| input | text MB | mode | wall s | pipeline MB/s | steady MB/s | kernel MB/s "
          "(1 core) | pipeline / (cores x kernel) | steady / (cores x kernel) | "
          "peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mb, text_mb, m, secs, mbps, steady, kern, peak in rows:
        c = MODES[m][0] * MODES[m][2]  # cores in use: workers x kernel threads
        print(f"| {mb} MB | {text_mb:,.0f} | {m} | {secs:.1f} | {mbps:.1f} | {steady:.1f} | "
              f"{kern:.1f} | {mbps / (c * kern):.0%} | {steady / (c * kern):.0%} | "
              f"{peak:,.0f} |")

if __name__ == "__main__":
    main()
