"""Benchmark: corpustok E2E WordPiece vs HF tokenizers, nanotoken and TF Text (single thread).

    .venv/bin/python bench/wordpiece.py [--max-mb 4] [--runs 3] [--full] [--tf-python PY]

Single-thread MB/s and tokens/s on the shared corpus (each line one document, bert-base-uncased,
BERT uncased options) for corpustok, HF ``tokenizers`` ``encode_batch`` with
``RAYON_NUM_THREADS=1``, nanotoken 0.1 (``parallel=False``, its chunk cache cleared before
each run, ids checked against ours) and TF Text ``FastBertTokenizer`` (one thread) when ``--tf-python``
names an interpreter that has ``tensorflow-text`` (TF pins its own numpy/protobuf, so it lives in
its own venv: ``python3 -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-text``); medians of ``--runs`` runs, ratios against the peers; then linear-scaling
runs on adversarial input. Wall-clock and process CPU time are both printed because the
machine may be shared: CPU time (all threads of this process; every contender runs on one
thread) is what the work costs when a core is not being time-sliced with other jobs.
"""
import argparse
import os
import platform
import sys
import time
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers is imported
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numba  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import tokenizers  # noqa: E402
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import timed  # noqa: E402

import corpustok  # noqa: E402
from corpustok.arrow import utf8_batch  # noqa: E402
from corpustok.wordpiece.tokenizer import WordPiece  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
VOCAB = ROOT / "tests" / "data" / "bert-base-uncased" / "vocab.txt"


def machine():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"machine: {platform.machine()} {cpu}, {os.cpu_count()} cores, load {load:.1f}; "
            f"python {platform.python_version()}, numba {numba.__version__}, numpy "
            f"{np.__version__}, pyarrow {pa.__version__}, tokenizers {tokenizers.__version__}, "
            f"corpustok {corpustok.__version__}")



def nanotoken_reference():
    """nanotoken 0.1 on the same vocab.txt (BERT uncased rules), or None when not installed."""
    try:
        import nanotoken
    except ImportError:
        return None
    return nanotoken.Tokenizer(str(VOCAB))


def hf_reference():
    vocab = {line.rstrip("\n"): i for i, line in enumerate(open(VOCAB, encoding="utf-8"))}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tok


TF_WORKER = """
import json, os, statistics, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
import tensorflow_text as tft
vocab = [line.rstrip("\\n") for line in open(sys.argv[1], encoding="utf-8")]
fast = tft.FastBertTokenizer(vocab, lower_case_nfd_strip_accents=True)
runs = int(sys.argv[2])
for path in sys.stdin:
    with open(path.strip(), encoding="utf-8") as f:
        batch = tf.constant(json.load(f))
    n = int(fast.tokenize(batch).flat_values.shape[0])
    wall, cpu = [], []
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        fast.tokenize(batch)
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    print(json.dumps([statistics.median(wall), statistics.median(cpu), n]), flush=True)
"""


def tf_text(args):
    """``measure(lines) -> (wall, cpu, tokens)`` for TF Text ``FastBertTokenizer`` (one
    thread), run by ``--tf-python`` (an interpreter that has tensorflow-text, so TF need not
    share this environment), or None."""
    import subprocess
    import tempfile
    if not args.tf_python:
        print("TF Text: no --tf-python interpreter given; its column is skipped")
        return None
    proc = subprocess.Popen([args.tf_python, "-c", TF_WORKER, str(VOCAB), str(args.runs)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def measure(lines):
        import json
        with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as f:
            json.dump(lines, f)
            f.flush()
            proc.stdin.write(f.name + "\n")
            proc.stdin.flush()
            reply = proc.stdout.readline()
        if not reply:
            sys.exit("TF Text worker failed (see its error above)")
        return tuple(json.loads(reply))
    return measure


def corpus_table(args):
    t = time.perf_counter()
    wp = WordPiece.from_vocab(VOCAB)
    size = wp.memory_bytes  # builds the arrays
    print(f"model: bert-base-uncased, {wp.vocab_size} tokens, built in "
          f"{time.perf_counter() - t:.1f} s, {size / 2**20:.2f} MiB of arrays "
          f"(trie {(wp.memory_report()['da'] + wp.memory_report()['info']) / 2**20:.2f} MiB)")
    hf = hf_reference()
    nano = nanotoken_reference()
    tf_fn = tf_text(args)
    files = sorted((SHARED / "corpus").glob("*.txt.xz"))
    if not files:
        sys.exit(f"no corpus under {SHARED}/corpus")
    import lzma
    tot = {"bytes": 0, "tokens": 0, "tf_tokens": 0, "ours": [0.0, 0.0], "hf": [0.0, 0.0],
           "tf": [0.0, 0.0], "nano": [0.0, 0.0], "nano_differ": 0}
    print(f"\n{'file':<24}{'MB':>7}{'docs':>9}{'tokens':>10}  {'corpustok MB/s':>15}"
          f"{'HF MB/s':>16}{'nanotoken':>16}{'TF MB/s':>9}{'x HF':>7}  (wall [CPU])")
    for path in files:
        with lzma.open(path, "rb") as f:
            raw = f.read() if args.full else f.read(int(args.max_mb * 2**20))
        raw = raw[: raw.rfind(b"\n") + 1] if not args.full else raw
        lines = raw.decode("utf-8").splitlines()
        arr = pa.array(lines, pa.large_string())
        batch = utf8_batch(arr)
        n_bytes = int(batch.offsets[-1])
        ids, _, _ = wp.encode_arrays(batch)
        ours = timed(lambda: wp.encode_arrays(batch), args.runs)
        theirs = timed(lambda: hf.encode_batch(lines, add_special_tokens=False), args.runs)
        nano_t = None
        if nano is not None:
            want = wp.encode_batch(arr).to_pylist()
            got = nano.encode_batch_list(lines, add_special_tokens=False, parallel=False)
            tot["nano_differ"] += sum(a != b for a, b in zip(got, want))

            def nano_fresh():  # its chunk cache persists across calls: time it empty
                nano.clear_cache()
                return nano.encode_batch_list(lines, add_special_tokens=False, parallel=False)
            nano_t = timed(nano_fresh, args.runs)
        tf_t = tf_fn(lines) if tf_fn else None
        mb = n_bytes / 1e6
        tf_s = f"{mb / tf_t[0]:9.1f}" if tf_t else f"{'-':>9}"
        print(f"{path.name[:-7]:<24}{mb:7.1f}{len(lines):9d}{len(ids):10d}  "
              f"{mb / ours[0]:7.1f} [{mb / ours[1]:5.1f}]"
              f"{mb / theirs[0]:8.1f} [{mb / theirs[1]:5.1f}]"
              + (f"{mb / nano_t[0]:8.1f} [{mb / nano_t[1]:5.1f}]" if nano_t else f"{'-':>16}")
              + f"{tf_s}"
              f"{theirs[0] / ours[0]:7.1f}")
        tot["bytes"] += n_bytes
        tot["tokens"] += len(ids)
        tot["tf_tokens"] += tf_t[2] if tf_t else 0
        for key, t in (("ours", ours), ("hf", theirs), ("tf", tf_t), ("nano", nano_t)):
            if t:
                tot[key][0] += t[0]
                tot[key][1] += t[1]
    mb = tot["bytes"] / 1e6
    o, h = tot["ours"], tot["hf"]
    print(f"\nTOTAL {mb:.1f} MB, {tot['tokens']} tokens, medians of {args.runs} runs per file:")
    print(f"  corpustok E2E : {mb / o[0]:7.1f} MB/s wall ({mb / o[1]:.1f} CPU), "
          f"{tot['tokens'] / o[0] / 1e6:.2f} M tokens/s")
    print(f"  HF tokenizers : {mb / h[0]:7.1f} MB/s wall ({mb / h[1]:.1f} CPU), "
          f"{tot['tokens'] / h[0] / 1e6:.2f} M tokens/s  (RAYON_NUM_THREADS=1)")
    if nano is not None:
        t = tot["nano"]
        print(f"  nanotoken     : {mb / t[0]:7.1f} MB/s wall ({mb / t[1]:.1f} CPU), "
              f"{tot['tokens'] / t[0] / 1e6:.2f} M tokens/s  (parallel=False, cache cleared "
              f"per run; {tot['nano_differ']} documents with other ids than corpustok)")
        print(f"  corpustok / nanotoken = {t[0] / o[0]:.2f}x wall, {t[1] / o[1]:.2f}x CPU")
    else:
        print("  nanotoken     : not installed (pip install nanotoken==0.1.0)")
    if tf_fn:
        t = tot["tf"]
        print(f"  TF Text       : {mb / t[0]:7.1f} MB/s wall ({mb / t[1]:.1f} CPU), "
              f"{tot['tf_tokens'] / t[0] / 1e6:.2f} M tokens/s  (FastBertTokenizer, 1 thread; "
              "its NFKC-casefold normalization is not HF's, so token counts differ)")
        print(f"  corpustok / TF = {t[0] / o[0]:.2f}x wall, {t[1] / o[1]:.2f}x CPU")
    else:
        print("  TF Text       : not measured (pass --tf-python)")
    print(f"  corpustok / HF = {h[0] / o[0]:.1f}x wall, {h[1] / o[1]:.1f}x CPU")


def scaling(args):
    print("\nLinear scaling on adversarial input (corpustok, median MB/s; equal rates = linear):")
    wp = WordPiece.from_vocab(VOCAB)
    long_tokens = (["[UNK]"] + ["a" * k for k in range(1, 201)]
                   + ["##" + "a" * k for k in range(1, 201)])
    long_vocab = WordPiece(long_tokens, max_input_chars_per_word=2**31 - 1)
    word = "abcdefghij" * 10
    cases = [
        ("one letter, no spaces", wp, lambda n: ["a" * n], "e2e"),
        ("100-char word repeated", wp, lambda n: [(word + " ") * (n // 101)], "e2e"),
        ("long-token vocab, a^n one word", long_vocab, lambda n: ["a" * n], "words"),
        ("long-token vocab, E2E (a^150 space)*", long_vocab,
         lambda n: [("a" * 150 + " ") * (n // 151)], "e2e"),
    ]
    for name, model, make, mode in cases:
        rates = []
        for size in (1 << 20, 16 << 20):
            docs = make(size)
            if mode == "e2e":
                batch = utf8_batch(docs)
                wall, cpu = timed(lambda: model.encode_arrays(batch), args.runs)
            else:
                wall, cpu = timed(lambda: model.encode_words(docs), args.runs)
            mb = size / 1e6
            rates.append(f"{size >> 20:2d} MB: {mb / wall:7.1f} ({mb / cpu:7.1f} CPU)")
        print(f"  {name:<34}" + "   ".join(rates))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-mb", type=float, default=4.0, help="MiB read from each corpus file")
    ap.add_argument("--full", action="store_true", help="whole corpus files")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-scaling", action="store_true")
    ap.add_argument("--tf-python", help="python with tensorflow-text installed (e.g. a separate "
                    "venv); TF Text runs there in a worker process on the same lines")
    args = ap.parse_args()
    print(machine())
    corpus_table(args)
    if not args.no_scaling:
        scaling(args)


if __name__ == "__main__":
    main()
