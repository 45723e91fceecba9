"""Benchmark: SentencePiece Unigram (T5, mT5, ALBERT), one thread and more, corpustok vs
sentencepiece, HF tokenizers and tokie, on real documents.

    .venv/bin/python bench/sentencepiece_unigram.py [--mb 20] [--runs 1]
        [--models t5,mt5,albert,albert-hf] [--threads 1,2]
        [--engines corpustok,sentencepiece,hf,tokie] [--json bench/results/....json]

Documents: the first ``--mb`` MB of ``../shared/data/corpus-b`` (web-page-sized documents:
prose, code, ~30 languages), in file order. Each (model, engine) runs in a fresh process: load
the tokenizer (timed), one tiny call (timed: Numba compiles on a cold cache, the others warm
up), then ``--runs`` passes over all documents (median CPU and wall seconds; CPU is the fair
figure on a shared machine). Every engine's ids are compared document by document with
``sentencepiece``'s on the ``.model`` (the oracle): ``docs differing`` must be 0 for
corpustok; HF and tokie run a ``tokenizer.json`` (T5's own; for mT5 and ALBERT one built here
from the ``.model`` with the pipeline of T5's json, see :func:`hf_json`), whose semantics differ
on a few inputs (decision 0033), so their count is reported, not required.

Engines, ``T`` threads each (every count of ``--threads``; one by default): corpustok
``encode_arrays`` (``threads=T``, Arrow batches of 1,000 documents) on the ``.model`` and
(``corpustok-json``) on the ``tokenizer.json``, whose oracle is HF on the same json (``docs
differing from HF`` must be 0 for it), sentencepiece ``encode(list, num_threads=T)``, HF
``encode_batch_fast`` and tokie 0.1.4 ``encode_batch_flat`` with ``RAYON_NUM_THREADS=T``.
With more than one thread, wall time is the figure (CPU time adds the threads up); on a
shared machine a second core may be busy, so those rows are indicative.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # before tokenizers/tokie are imported
THREADS = int(os.environ["RAYON_NUM_THREADS"])  # a worker's thread count (set by main)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
SP_DIR = SHARED / "vocab" / "sentencepiece"
CORPUS = SHARED / "corpus-b"

# the family table: model name -> its .model and its HF tokenizer.json (None: built here)
FAMILY = {
    "t5": {"model": "t5/spiece.model", "json": "t5/tokenizer.json"},
    "mt5": {"model": "mt5/spiece.model", "json": None},
    "albert": {"model": "albert/spiece.model", "json": None},
    # ALBERT's .model with the json transformers' AlbertConverter writes (do_lower_case=True,
    # keep_accents=False: NFKD, StripAccents, Lowercase; decision 0039): the sentencepiece
    # column has no lowercasing, so only corpustok-json vs hf counts for this row
    "albert-hf": {"model": "albert/spiece.model", "json": None, "albert_normalizer": True},
}
ENGINES = ["sentencepiece", "corpustok", "hf", "corpustok-json", "tokie"]
BATCH_DOCS = 1000


def documents(mb):
    import pyarrow.parquet as pq
    texts, size = [], 0
    for part in sorted(CORPUS.glob("*.parquet")):
        for text in pq.read_table(part, columns=["text"]).column("text").to_pylist():
            if text is None:
                continue
            texts.append(text)
            size += len(text.encode("utf-8"))
            if size >= mb * 1e6:
                return texts, size
    return texts, size


def hf_json(model_path, dest, albert_normalizer=False):
    """A ``tokenizer.json`` for a Unigram ``.model`` with the pipeline of T5's own json (as
    ``transformers``' T5 converter writes it): Precompiled(charsmap), Strip(right), Replace('
    {2,}', '▁'), Metaspace(always, split). ``transformers``' converter itself cannot run here
    (its protobuf pin), so the model is read with corpustok's reader. With
    ``albert_normalizer`` the normalizer is the one ``AlbertConverter`` writes by default
    (tests/sentencepiece/test_sentencepiece_hf_unigram.py checks that shape): Replace ``,
    Replace '', NFKD, StripAccents, Lowercase, Precompiled, Replace(' {2,}', ' ')."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from corpustok.sentencepiece.model_file import UNKNOWN, read_model
    m = read_model(model_path)
    unk = int(np.flatnonzero(m.types == UNKNOWN)[0])
    tok = Tokenizer(models.Unigram([(p, float(s)) for p, s in zip(m.pieces, m.scores)], unk,
                                   byte_fallback=m.byte_fallback))
    steps = []
    if albert_normalizer:
        steps += [normalizers.Replace("``", '"'), normalizers.Replace("''", '"'),
                  normalizers.NFKD(), normalizers.StripAccents(), normalizers.Lowercase()]
    if m.normalizer["precompiled_charsmap"]:
        steps.append(normalizers.Precompiled(m.normalizer["precompiled_charsmap"]))
    if albert_normalizer:
        steps.append(normalizers.Replace(Regex(" {2,}"), " "))
    else:
        steps += [normalizers.Strip(left=False, right=True),
                  normalizers.Replace(Regex(" {2,}"), "\u2581")]
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.save(str(dest))
    return dest


def encoder(engine, name, json_dir):
    """``(load seconds, encode(texts) -> (ids int64, lengths int64))``."""
    info = FAMILY[name]
    model = SP_DIR / info["model"]
    js = SP_DIR / info["json"] if info["json"] else Path(json_dir) / f"{name}.tokenizer.json"
    t = time.perf_counter()
    if engine in ("corpustok", "corpustok-json"):
        import corpustok
        # the .model, or the json (HfUnigramTokenizer: HF's semantics, decision 0037)
        run = _corpustok_run(corpustok.load(model if engine == "corpustok" else js))
    elif engine == "sentencepiece":
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=str(model))

        def run(texts):
            out = sp.encode(texts, num_threads=THREADS)
            return _flat(out)
    elif engine == "hf":
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(str(js))

        def run(texts):
            out = tok.encode_batch_fast(texts, add_special_tokens=False)
            return _flat([e.ids for e in out])
    elif engine == "tokie":
        import tokie
        tok = tokie.Tokenizer.from_json(str(js))

        def run(texts):
            ids, lens = tok.encode_batch_flat(texts, add_special_tokens=False)
            return ids.astype(np.int64), lens.astype(np.int64)
    else:
        raise SystemExit(f"unknown engine {engine}")
    return time.perf_counter() - t, run


def _corpustok_run(tok):
    """``run(texts)`` of a corpustok tokenizer: ``encode_arrays`` on THREADS threads over
    Arrow batches of BATCH_DOCS documents."""
    from corpustok.arrow import utf8_batch  # here: a worker imports its own engine only

    def run(texts):
        ids, lens = [], []
        for a in range(0, len(texts), BATCH_DOCS):
            out, offs, _ = tok.encode_arrays(utf8_batch(texts[a:a + BATCH_DOCS]),
                                             threads=THREADS)
            ids.append(out)
            lens.append(np.diff(offs))
        return np.concatenate(ids), np.concatenate(lens)
    return run


def _flat(lists):
    lens = np.fromiter((len(x) for x in lists), np.int64, len(lists))
    ids = np.fromiter((i for x in lists for i in x), np.int64, int(lens.sum()))
    return ids, lens


def worker(args):
    texts, size = documents(args.mb)
    load_s, run = encoder(args.worker, args.model, args.json_dir)
    c, w = time.process_time(), time.perf_counter()
    run(["A first call: Hello world."])
    first_s = time.perf_counter() - w
    cpu, wall = [], []
    for _ in range(args.runs):
        c, w = time.process_time(), time.perf_counter()
        ids, lens = run(texts)
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    np.savez(args.ids_out, ids=ids, lens=lens)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({"engine": args.worker, "model": args.model, "threads": THREADS,
                      "peak_rss_mib": round(rss), "docs": len(texts),
                      "bytes": size, "load_s": load_s, "first_call_s": first_s,
                      "cpu_s": float(np.median(cpu)), "wall_s": float(np.median(wall)),
                      "tokens": int(lens.sum())}))


def differing_docs(a, b):
    """Documents whose ids differ between two ``(ids, lens)``."""
    ids_a, lens_a = a
    ids_b, lens_b = b
    if len(lens_a) != len(lens_b):
        return -1
    oa = np.concatenate([[0], np.cumsum(lens_a)])
    ob = np.concatenate([[0], np.cumsum(lens_b)])
    return sum(1 for j in range(len(lens_a)) if lens_a[j] != lens_b[j] or
               not np.array_equal(ids_a[oa[j]:oa[j + 1]], ids_b[ob[j]:ob[j + 1]]))


def versions():
    out = {"python": sys.version.split()[0]}
    for name in ["corpustok", "sentencepiece", "tokenizers", "tokie", "numba", "numpy"]:
        try:
            from importlib.metadata import version
            out[name] = version(name)
        except Exception:
            out[name] = "not installed"
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=20)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--models", default="t5,mt5,albert,albert-hf")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--threads", default="1", help="thread counts, e.g. 1,2")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--json-dir", help=argparse.SUPPRESS)
    ap.add_argument("--ids-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if not CORPUS.is_dir() or not SP_DIR.is_dir():
        raise SystemExit(f"needs {CORPUS} and {SP_DIR}")
    engines = args.engines.split(",")
    if "sentencepiece" not in engines:
        engines.insert(0, "sentencepiece")  # the oracle every row is checked against
    tmp = tempfile.mkdtemp(prefix="bench-spu-")
    rows = []
    cpu_name = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                     if l.startswith("model name")), "?")
    print(f"== SentencePiece Unigram, threads {args.threads}; {cpu_name}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; {versions()}")
    print(f"{'model':9} {'engine':14} {'thr':>3} {'MB/s cpu':>9} {'MB/s wall':>9} {'tokens':>10} "
          f"{'docs differing':>14} {'load s':>7} {'1st call s':>10} {'RSS MiB':>8}")
    for name in args.models.split(","):
        if FAMILY[name]["json"] is None and ({"hf", "tokie", "corpustok-json"} & set(engines)):
            hf_json(SP_DIR / FAMILY[name]["model"], Path(tmp) / f"{name}.tokenizer.json",
                    FAMILY[name].get("albert_normalizer", False))
        oracle = hf_ids = None
        for threads, engine in [(t, e) for t in map(int, args.threads.split(","))
                                for e in engines]:
            ids_out = Path(tmp) / f"{name}-{engine}-{threads}.npz"
            done = subprocess.run(
                [sys.executable, __file__, "--worker", engine, "--model", name, "--mb",
                 str(args.mb), "--runs", str(args.runs), "--json-dir", tmp, "--ids-out",
                 str(ids_out)], capture_output=True, text=True,
                env={**os.environ, "PYTHONPATH": str(REPO),
                     "RAYON_NUM_THREADS": str(threads)})
            if done.returncode:
                print(f"{name:9} {engine:14} {threads:3} failed: "
                      f"{done.stderr.strip().splitlines()[-1:]}")
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            got = np.load(ids_out)
            got = (got["ids"], got["lens"])
            if engine == "sentencepiece" and oracle is None:
                oracle = got
            row["docs_differing"] = differing_docs(got, oracle) if oracle else None
            if engine == "hf" and hf_ids is None:
                hf_ids = got
            if engine == "corpustok-json":
                row["docs_differing_from_hf"] = differing_docs(got, hf_ids) if hf_ids else None
            row["mb_s_cpu"] = row["bytes"] / 1e6 / row["cpu_s"]
            row["mb_s_wall"] = row["bytes"] / 1e6 / row["wall_s"]
            rows.append(row)
            print(f"{name:9} {engine:14} {threads:3} {row['mb_s_cpu']:9.1f} {row['mb_s_wall']:9.1f} "
                  f"{row['tokens']:10,} {row['docs_differing']!s:>14} {row['load_s']:7.2f} "
                  f"{row['first_call_s']:10.2f} {row['peak_rss_mib']:8,}" + (
                      f"  (docs differing from HF: {row['docs_differing_from_hf']})"
                      if "docs_differing_from_hf" in row else ""), flush=True)
    if args.json:
        result = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                  "command": "bench/sentencepiece_unigram.py " + " ".join(sys.argv[1:]),
                  "machine": f"{cpu_name}, {os.cpu_count()} cores (shared)",
                  "versions": versions(), "mb": args.mb, "runs": args.runs,
                  "corpus": str(CORPUS.relative_to(REPO.parent)), "rows": rows}
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
