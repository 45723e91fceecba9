"""Benchmark: SentencePiece-family encoding, corpustok vs sentencepiece, HF tokenizers,
gigatoken (BPE files) on real documents, one thread (and two), each run in a fresh process.

    .venv/bin/python bench/sentencepiece_models.py [--mb 20] [--runs 3] [--families llama2,gemma]
                                            [--threads 1,2]
                                            [--json bench/results/DATE-sentencepiece.json]

Documents: ``--mb`` MB of ``../shared/data/corpus-b`` (real documents, median ~3 KB: code,
prose, ~30 languages), drawn at random (seed 0) from both files; 1 MB of other documents
warms every contender up first (compilation, caches, allocators), so the timed call is a
first sighting of its text, as in a corpus job. Each (family, contender) runs ``--runs`` times,
each in a new Python process (no cache survives from a previous run; ``RAYON_NUM_THREADS=1``).
Timed: one batch call over all the documents, process CPU time and wall time (the machine may
be shared: CPU time is the cost of a core). Runs go in turns (one run of every contender, then
the next), and corpustok's speed over each contender is also given per run from those pairs
(decision 0032: the host drifts between rows). The ids of every contender are compared with
``sentencepiece``'s, document by document: gigatoken and HF read control-token text such as
``<s>`` in a document as the control token, sentencepiece (and corpustok, following the
``.model``) as text, so the documents that hold such text are counted apart. A family with
no ``.model`` (Gemma 3: its ``tokenizer.json``) is compared with HF ``tokenizers``' ids,
which corpustok follows for a json.

Contenders (the fastest documented single-thread call of each):
- ``corpustok``: ``corpustok.load(model).encode_batch(pyarrow string array)``.
- ``sentencepiece``: ``SentencePieceProcessor.encode(list[str], num_threads=1)``.
- ``hf``: ``tokenizers.Tokenizer.from_file(json).encode_batch(list, add_special_tokens=False)``,
  where ../shared holds the family's ``tokenizer.json`` (Mistral v0.1, Gemma 1/2).
- ``gigatoken``: ``Tokenizer(tokenizer.model).encode_batch(BytesSource(buffer, separator),
  parallel=False)``: its documented fastest path (one buffer, documents cut at a separator
  byte that no document holds, inside the call).

(Named ``sentencepiece_models.py``, not ``sentencepiece.py``: a script's folder is first on
``sys.path``, so that name would shadow the ``sentencepiece`` package for every script here.)

With ``--threads 1,2`` each family also gets two-thread rows, corpustok against gigatoken only:
corpustok's ``encode_batch(array, threads=2)`` (its warm-up call, with two threads too, makes
both threads' caches first: decision 0032) and gigatoken's ``encode_batch(BytesSource,
parallel=True)`` with ``RAYON_NUM_THREADS=2``; their paired ratios are of wall time (what a
second core buys), CPU time beside it. On a machine shared with other jobs the two-thread
rows are only indicative.

Families are a table (:data:`FAMILIES`): a Unigram family (T5, mT5, ALBERT against tokie) is
a row with ``kind="unigram"`` and its contenders.
"""
import argparse
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# before tokenizers or gigatoken start their pools: one thread unless a two-thread run
os.environ["RAYON_NUM_THREADS"] = os.environ.get("SP_BENCH_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
SP_DIR = SHARED / "vocab" / "sentencepiece"
CORPUS_B = SHARED / "corpus-b"

FAMILIES = {
    "llama2": dict(kind="bpe", model="llama2/tokenizer.model", hf=None,
                   contenders=["corpustok", "sentencepiece", "gigatoken"]),
    "mistral-v0.1": dict(kind="bpe", model="mistral-7b-v0.1/tokenizer.model.v1",
                         hf="mistral-7b-v0.1/tokenizer.json",
                         contenders=["corpustok", "sentencepiece", "hf", "gigatoken"]),
    "mistral-v0.3": dict(kind="bpe", model="mistral-7b-v0.3/tokenizer.model.v3", hf=None,
                         contenders=["corpustok", "sentencepiece", "gigatoken"]),
    "gemma": dict(kind="bpe", model="gemma-1-2/tokenizer.model",
                  hf="gemma-1-2/gemma2.tokenizer.json",
                  contenders=["corpustok", "sentencepiece", "hf", "gigatoken"]),
    # no .model: the json is the file, HF tokenizers its reference (corpustok follows it)
    "gemma-3-json": dict(kind="bpe", model="gemma-3/tokenizer.json", hf="gemma-3/tokenizer.json",
                         reference="hf", contenders=["corpustok", "hf", "gigatoken"]),
    # Unigram rows, when the Unigram kernel lands (tokie instead of gigatoken):
    # "t5": dict(kind="unigram", model="t5/spiece.model", hf="t5/tokenizer.json",
    #            contenders=["corpustok", "sentencepiece", "hf", "tokie"]),
}
SEPARATOR = b"\x00"  # gigatoken's document separator: no corpus-b document holds it


def documents(mb, seed=0):
    """``(timed, warm)``: ``mb`` MB of corpus-b documents drawn at random, and 1 MB of
    others for the warm-up."""
    import pyarrow.parquet as pq
    texts = [t for f in sorted(CORPUS_B.glob("*.parquet"))
             for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()]
    random.Random(seed).shuffle(texts)
    out, warm, size = [], [], 0
    for t in texts:
        if size < mb * 1e6:
            out.append(t)
            size += len(t.encode("utf-8"))
        elif sum(len(w) for w in warm) < 1e6:
            warm.append(t)
        else:
            break
    return out, warm


# ---- one run, in its own process --------------------------------------------------------------
def make_encoder(name, family, tmp, threads=1):
    """``(setup, encode, collect)`` of a contender: ``setup(texts)`` prepares the input form
    it takes and ``collect(output) -> (flat ids, lengths)`` reads the output (both untimed);
    ``encode(prepared)`` is timed. ``threads`` > 1: corpustok and gigatoken only."""
    model = str(SP_DIR / family["model"])
    if name == "corpustok":
        import pyarrow as pa
        import corpustok
        tok = corpustok.load(model)

        def collect(out):
            return out.values.to_numpy(), np.diff(out.offsets.to_numpy())
        return pa.array, lambda arr: tok.encode_batch(arr, threads=threads), collect
    if threads > 1 and name != "gigatoken":
        raise ValueError(f"{name}: one thread only here")
    if name == "sentencepiece":
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=model)

        def collect(ids):
            return np.fromiter((i for x in ids for i in x), np.int64), np.array(
                [len(x) for x in ids])
        return list, lambda texts: sp.encode(texts, num_threads=1), collect
    if name == "hf":
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(str(SP_DIR / family["hf"]))

        def collect(enc):
            return np.fromiter((i for e in enc for i in e.ids), np.int64), np.array(
                [len(e.ids) for e in enc])
        return list, lambda texts: tok.encode_batch(texts, add_special_tokens=False), collect
    if name == "gigatoken":
        import awkward as ak
        import gigatoken
        # gigatoken recognises the file by this name
        link = Path(tmp) / ("tokenizer.json" if model.endswith(".json") else "tokenizer.model")
        if not link.exists():
            link.symlink_to(model)
        tok = gigatoken.Tokenizer(str(link))

        def setup(texts):
            raw = [t.encode("utf-8") for t in texts]
            assert not any(SEPARATOR in r for r in raw)
            return gigatoken.BytesSource(SEPARATOR.join(raw), separator=SEPARATOR)

        def collect(out):
            return ak.flatten(out).to_numpy(), ak.num(out).to_numpy()
        return setup, lambda source: tok.encode_batch(source, parallel=threads > 1), collect
    raise ValueError(f"unknown contender {name}")


def worker(args):
    """One timed run: prints a JSON line ``{cpu, wall, load, first, rss}`` (``rss``: the
    process's peak resident MiB, documents included), writes the ids."""
    family = FAMILIES[args.family]
    texts, warm = documents(args.mb)
    with tempfile.TemporaryDirectory() as tmp:
        c = time.process_time()
        setup, encode, collect = make_encoder(args.worker, family, tmp, args.run_threads)
        load = time.process_time() - c
        warm_in = setup([t for t in warm if t])
        c = time.process_time()
        encode(warm_in)
        first = time.process_time() - c
        # gigatoken's separator mode skips empty documents: none is timed
        data = setup([t for t in texts if t])
        w, c = time.perf_counter(), time.process_time()
        out = encode(data)
        cpu, wall = time.process_time() - c, time.perf_counter() - w
        ids, lengths = collect(out)
    np.savez(args.ids, ids=np.asarray(ids, np.int64), lengths=np.asarray(lengths, np.int64))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({"cpu": cpu, "wall": wall, "load": load, "first": first, "rss": rss}))


def run_once(script, family, name, mb, ids_path, threads=1):
    out = subprocess.run([sys.executable, script, "--worker", name, "--family", family,
                          "--mb", str(mb), "--ids", ids_path, "--run-threads", str(threads)],
                         capture_output=True, text=True, check=False,
                         env=dict(os.environ, SP_BENCH_THREADS=str(threads)))
    if out.returncode:
        raise RuntimeError(f"{family}/{name} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare(ids_path, ref_path, texts):
    """Documents whose ids differ from sentencepiece's, and of those, how many hold
    control-token text (``<s>``, ``</s>``, ``<unk>``, ``<pad>``...)."""
    with np.load(ids_path) as fa, np.load(ref_path) as fb:  # each [] reads the file again
        a = {"ids": fa["ids"], "lengths": fa["lengths"]}
        b = {"ids": fb["ids"], "lengths": fb["lengths"]}
    if len(a["lengths"]) != len(b["lengths"]):
        return {"differ": -1, "note": "document counts differ"}
    oa = np.concatenate([[0], np.cumsum(a["lengths"])])
    ob = np.concatenate([[0], np.cumsum(b["lengths"])])
    differ = [k for k in range(len(oa) - 1) if a["lengths"][k] != b["lengths"][k] or
              not np.array_equal(a["ids"][oa[k]:oa[k + 1]], b["ids"][ob[k]:ob[k + 1]])]
    special = [k for k in differ if any(s in texts[k] for s in
                                        ("<s>", "</s>", "<unk>", "<pad>", "<mask>", "<2mass>",
                                         "[@BOS@]", "<unused", "<start_of", "<end_of"))]
    return {"differ": len(differ), "differ_with_control_text": len(special),
            "tokens": int(a["lengths"].sum())}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mb", type=float, default=20)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--families", default=",".join(FAMILIES))
    p.add_argument("--json", default=None)
    p.add_argument("--threads", default="1",
                   help="thread counts, e.g. 1,2 (more than 1: corpustok and gigatoken only)")
    p.add_argument("--note", default=None, help="a line for the json (e.g. the machine's load)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--run-threads", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--family", help=argparse.SUPPRESS)
    p.add_argument("--ids", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    if not CORPUS_B.is_dir():
        sys.exit(f"benchmark documents not found: {CORPUS_B}")
    script = str(Path(__file__).resolve())
    texts, _ = documents(args.mb)
    texts = [t for t in texts if t]
    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_start = os.getloadavg()
    thread_counts = sorted({1, *(int(t) for t in args.threads.split(","))})
    print(f"== SentencePiece encoding, threads {thread_counts}, fresh processes: {len(texts)} "
          f"corpus-b documents, {nbytes / 1e6:.1f} MB; medians of {args.runs} runs")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for family in args.families.split(","):
            spec = FAMILIES[family]
            reference = spec.get("reference", "sentencepiece")
            ref_path = os.path.join(tmp, f"{family}-{reference}-1.npz")
            for threads in thread_counts:
                rows += run_family(script, args, tmp, family, spec, threads, ref_path, texts,
                                   nbytes)
    if args.json:
        doc = {"machine": machine(), "date": f"{started} to "
               f"{time.strftime('%H:%M UTC', time.gmtime())}", "versions": versions(),
               "command": "bench/sentencepiece_models.py " + " ".join(sys.argv[1:]),
               "documents": {"source": "../shared/data/corpus-b (both files, shuffled, seed 0)",
                             "docs": len(texts), "bytes": nbytes},
               "load_average": {"start": [round(x, 2) for x in load_start],
                                "end": [round(x, 2) for x in os.getloadavg()]},
               "note": args.note, "threads": thread_counts, "rows": rows}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"written {args.json}")


def run_family(script, args, tmp, family, spec, threads, ref_path, texts, nbytes):
    """The rows of one family at one thread count: its contenders' runs in turns (two
    threads: corpustok and gigatoken), each compared with sentencepiece's ids."""
    reference = spec.get("reference", "sentencepiece")
    names = [reference] + [c for c in spec["contenders"] if c != reference]
    if threads > 1:
        names = [c for c in ("corpustok", "gigatoken") if c in spec["contenders"]]
    runs = {name: [] for name in names}
    for _ in range(args.runs):  # in turns: each run's contenders back to back
        for name in names:
            ids_path = os.path.join(tmp, f"{family}-{name}-{threads}.npz")
            runs[name].append(run_once(script, family, name, args.mb, ids_path, threads))
    rows = []
    for name in names:
        ids_path = os.path.join(tmp, f"{family}-{name}-{threads}.npz")
        cpu = statistics.median(r["cpu"] for r in runs[name])
        wall = statistics.median(r["wall"] for r in runs[name])
        check = compare(ids_path, ref_path, texts)
        # corpustok's speed over this contender's from the runs' pairs: CPU time, and wall
        # time (what two threads are for)
        ratio = [round(b["cpu"] / a["cpu"], 2) for a, b in zip(runs["corpustok"], runs[name])]
        ratio_wall = [round(b["wall"] / a["wall"], 2)
                      for a, b in zip(runs["corpustok"], runs[name])]
        row = {"family": family, "contender": name, "threads": threads,
               "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
               "mb_per_cpu_s": round(nbytes / 1e6 / cpu, 2),
               "mb_per_wall_s": round(nbytes / 1e6 / wall, 2),
               "load_cpu_s": round(statistics.median(r["load"] for r in runs[name]), 2),
               "warmup_cpu_s": round(statistics.median(r["first"] for r in runs[name]), 2),
               "peak_rss_mib": round(max(r["rss"] for r in runs[name])),
               "runs_cpu_s": [round(r["cpu"], 3) for r in runs[name]],
               "runs_wall_s": [round(r["wall"], 3) for r in runs[name]],
               "corpustok_speedup_paired": ratio,
               "corpustok_speedup_paired_wall": ratio_wall, **check}
        if reference != "sentencepiece":
            row["ids_compared_with"] = reference
        rows.append(row)
        print(f"  {family:13} {name:14} {threads}t {row['mb_per_cpu_s']:7.2f} MB/CPU-s "
              f"{row['mb_per_wall_s']:7.2f} MB/wall-s  cpu {cpu:6.2f} s  wall {wall:6.2f} s  "
              f"load {row['load_cpu_s']:5.2f} s  RSS {row['peak_rss_mib']:,} MiB  corpustok/it cpu {ratio} wall {ratio_wall}  "
              f"docs differing from {reference}: {check['differ']} "
              f"({check.get('differ_with_control_text', 0)} with control-token text)",
              flush=True)
    return rows


def machine():
    cpu = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def versions():
    from importlib.metadata import PackageNotFoundError, version
    out = {"python": platform.python_version()}
    for name in ("corpustok", "sentencepiece", "tokenizers", "gigatoken", "numba", "pyarrow"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


if __name__ == "__main__":
    main()
