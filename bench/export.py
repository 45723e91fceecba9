"""Export throughput and memory: a 1 GB shard folder to Megatron, datatrove and numpy layouts.

Builds (or reuses) the 1 GB Parquet corpus of ``bench/pipeline.py``, tokenizes it once with
GPT-2 (two threads), then runs ``corpustok export`` for each format, in order and shuffled
(``--seed``), each in a fresh subprocess, ``--runs`` times in turns. Prints the median wall
time, MB/s of token ids written (at their exported width) and of shard files read, and the
peak RSS of the export process (sampled every 50 ms), beside the folder's size.

    .venv/bin/python bench/export.py [--mb 1000] [--runs 3] [--formats megatron,datatrove,numpy]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import banner  # noqa: E402
from pipeline import GPT2, build_input, corpus_documents, tree_rss  # noqa: E402


def shard_folder(work, mb):
    """A COMPLETED GPT-2 shard folder of ``mb`` MB of text (made once, reused)."""
    out = os.path.join(work, f"export-shards-{mb}MB")
    if os.path.exists(os.path.join(out, ".corpustok", "manifest.json")):
        return out
    import corpustok
    from corpustok.pipeline.jobs.tokenize import tokenize
    tok = os.path.join(work, "gpt2.json")
    if not os.path.exists(tok):
        corpustok.BytePairTokenizer.from_hf(os.path.join(GPT2, "vocab.json"),
                                            os.path.join(GPT2, "merges.txt")).save(tok)
    r = tokenize([build_input(work, mb, corpus_documents())], out, tok, eos=50256, workers=2)
    assert r.ok
    return out


def run_export(folder, fmt, prefix, seed):
    """``(seconds, peak RSS bytes)`` of one ``corpustok export`` in a child process."""
    for name in os.listdir(os.path.dirname(prefix)):
        if name.startswith(os.path.basename(prefix) + "."):
            os.remove(os.path.join(os.path.dirname(prefix), name))
    cmd = [sys.executable, "-m", "corpustok.pipeline.cli", "export", folder, "--format", fmt,
           "--out", prefix] + ([] if seed is None else ["--seed", str(seed)])
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        time.sleep(0.05)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"export failed: {proc.stderr.read().decode()}")
    return seconds, peak


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=1000, help="MB of text in the shard folder")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--formats", default="megatron,datatrove,numpy")
    ap.add_argument("--work", default=os.path.join("/tmp", "corpustok-bench"))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    banner("corpustok export", ("numpy", "pyarrow"))
    folder = shard_folder(args.work, args.mb)
    with open(os.path.join(folder, ".corpustok", "manifest.json")) as f:
        totals = json.load(f)["totals"]
    shard_bytes = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder)
                      if n.endswith(".parquet"))
    print(f"shard folder: {totals['shards']} shards, {totals['documents']:,} documents, "
          f"{totals['tokens']:,} tokens, {shard_bytes / 1e6:,.0f} MB of Parquet; "
          f"medians of {args.runs}, formats in turns")
    cases = [(fmt, seed) for fmt in args.formats.split(",") for seed in (None, 7)]
    results = {c: [] for c in cases}
    for _ in range(args.runs):
        for fmt, seed in cases:
            results[(fmt, seed)].append(run_export(folder, fmt, os.path.join(
                args.work, f"export-{fmt}"), seed))
    print("| format | order | wall s | token MB/s written | shard MB/s read | peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for fmt, seed in cases:
        res = results[(fmt, seed)]
        secs = statistics.median(r[0] for r in res)
        peak = max(r[1] for r in res)
        with open(os.path.join(args.work, f"export-{fmt}.export.json")) as f:
            width = {"uint16": 2, "int32": 4, "uint32": 4}[json.load(f)["dtype"]]
        print(f"| {fmt} | {'shuffled' if seed is not None else 'in order'} | {secs:.1f} | "
              f"{totals['tokens'] * width / 1e6 / secs:,.0f} | {shard_bytes / 1e6 / secs:,.0f} "
              f"| {peak / 2**20:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
