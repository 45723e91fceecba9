"""Benchmark: corpustok byte-level BPE encoding vs HF tokenizers, tiktoken and SentencePiece.

    .venv/bin/python bench/bpe.py [--mb 24] [--train-mb 8] [--runs 3] [--no-adversarial]

Single thread throughout (``RAYON_NUM_THREADS=1``; tiktoken's batch call with
``num_threads=1``). Each line of the shared corpus is one document. Three parts:

1. The GPT-2 files (``tests/data/gpt2``): corpustok vs HF ``ByteLevelBPETokenizer`` vs tiktoken
   built from the same files (a plain loop of ``encode_ordinary``, its fastest single-thread
   mode, and ``encode_ordinary_batch``), all giving the same ids (checked).
2. 32K vocabularies trained on ``--train-mb`` MB of the same text: HF ``utf8``
   byte-level BPE (encoded by corpustok, HF and tiktoken), corpustok ``ube``, and
   SentencePiece BPE; training times are printed as set-up information.
3. Linear scaling on adversarial input: 1 MB and 16 MB of one letter, of one punctuation
   character, of letters without spaces.

Medians of ``--runs`` runs after a warm-up; wall-clock and process CPU time are both printed
because the machine may be shared (CPU time is the cost when a core is not time-sliced).
"""
import argparse
import io
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers is imported
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pyarrow as pa  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_CORPUS, banner, timed  # noqa: E402

from corpustok.bpe import BytePairTokenizer  # noqa: E402
from corpustok.pretokenize import GPT2_PATTERN  # noqa: E402
from corpustok.ube import bytes_to_unicode  # noqa: E402

GPT2 = Path(__file__).resolve().parents[1] / "tests" / "data" / "gpt2"



def report(rows, nbytes, ref):
    """Print MB/s (wall, CPU) per contender and the ratio of each to ``ref``'s CPU MB/s."""
    base = nbytes / rows[ref][1]
    print(f"  {'contender':44s} {'wall MB/s':>9s} {'CPU MB/s':>9s} {'x ' + ref[:18]:>20s}")
    for name, (wall, cpu) in rows.items():
        print(f"  {name:44s} {nbytes / wall / 1e6:9.2f} {nbytes / cpu / 1e6:9.2f} "
              f"{nbytes / cpu / base:20.2f}")


def corpus_sample(mb):
    """Lines from every shared corpus file, the same share of ``mb`` MB from each (the first
    ``mb`` MB of the sorted files would be one English manual)."""
    import lzma
    files = sorted(SHARED_CORPUS.glob("*.txt.xz"))
    if not files:
        sys.exit(f"benchmark corpus not found: {SHARED_CORPUS}/*.txt.xz")
    lines = []
    for path in files:
        size = 0
        with lzma.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                if size >= mb * 1e6 / len(files):
                    break
                lines.append(line)
                size += len(line.encode("utf-8"))
    return lines


def differ(a, b):
    return sum(x != y for x, y in zip(a, b))


def tiktoken_from_vocab(vocab, name):
    """tiktoken Encoding from an HF byte-level vocabulary (rank = id; specials dropped)."""
    import tiktoken
    byte_of = {c: b for b, c in enumerate(bytes_to_unicode())}
    ranks = {}
    for tok, i in vocab.items():
        if all(c in byte_of for c in tok):
            ranks[bytes(byte_of[c] for c in tok)] = i
    return tiktoken.Encoding(name, pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                             special_tokens={})


def encode_contenders(ours, hf, enc, lines, arr, runs, label):
    rows = {f"corpustok encode_batch(list[str]) {label}": timed(lambda: ours.encode_batch(lines),
                                                               runs),
            f"corpustok encode_batch(Arrow) {label}": timed(lambda: ours.encode_batch(arr), runs)}
    if enc is not None:
        rows[f"tiktoken loop encode_ordinary {label}"] = timed(
            lambda: [enc.encode_ordinary(t) for t in lines], runs)
        rows[f"tiktoken encode_ordinary_batch {label}"] = timed(
            lambda: enc.encode_ordinary_batch(lines, num_threads=1), runs)
    if hf is not None:
        rows[f"HF encode_batch {label}"] = timed(lambda: hf.encode_batch(lines), runs)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=24, help="MB of corpus text to encode")
    ap.add_argument("--train-mb", type=float, default=8, help="MB to train the 32K vocabularies")
    ap.add_argument("--vocab-size", type=int, default=32000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-adversarial", action="store_true")
    args = ap.parse_args()

    import sentencepiece as spm
    from tokenizers import ByteLevelBPETokenizer

    banner("byte-level BPE encode, single thread",
           ("numba", "numpy", "pyarrow", "tokenizers", "tiktoken", "sentencepiece"))
    lines = corpus_sample(args.mb)
    nbytes = sum(len(t.encode("utf-8")) for t in lines)
    arr = pa.array(lines, pa.large_string())
    print(f"input: shared corpus, an equal share of each of its files, {len(lines)} lines, "
          f"{nbytes / 1e6:.1f} MB; "
          f"medians of {args.runs} runs")

    # 1. GPT-2 files -------------------------------------------------------------------------
    ours = BytePairTokenizer.from_hf(GPT2 / "vocab.json", GPT2 / "merges.txt")
    hf = ByteLevelBPETokenizer(str(GPT2 / "vocab.json"), str(GPT2 / "merges.txt"),
                               add_prefix_space=False)
    enc = tiktoken_from_vocab(json.loads((GPT2 / "vocab.json").read_text("utf-8")), "gpt2")
    ids = ours.encode_batch(lines).to_pylist()
    print(f"\n[1] GPT-2 vocabulary (50257); lines where corpustok ids differ from tiktoken: "
          f"{differ(ids, enc.encode_ordinary_batch(lines))}, from HF: "
          f"{differ(ids, [e.ids for e in hf.encode_batch(lines)])} of {len(lines)}")
    report(encode_contenders(ours, hf, enc, lines, arr, args.runs, "gpt2"), nbytes,
           "tiktoken loop encode_ordinary gpt2")

    # 2. 32K vocabularies trained on the same text ---------------------------------------------
    train_lines = corpus_sample(args.train_mb)
    tmb = sum(len(t.encode("utf-8")) for t in train_lines) / 1e6
    print(f"\n[2] {args.vocab_size} vocabularies trained on {tmb:.1f} MB sampled the same way")
    t0 = time.perf_counter()
    hf32 = ByteLevelBPETokenizer(add_prefix_space=False)
    hf32.train_from_iterator(train_lines, vocab_size=args.vocab_size, min_frequency=0,
                             show_progress=False)
    t_hf = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        hf32.save(os.path.join(tmp, "tokenizer.json"))
        ours_utf8 = BytePairTokenizer.from_hf(os.path.join(tmp, "tokenizer.json"))
    enc32 = tiktoken_from_vocab(ours_utf8.vocab, "utf8-32k")
    t0 = time.perf_counter()
    ours_ube = BytePairTokenizer.train(train_lines, args.vocab_size, substrate="ube")
    t_ube = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(train_lines), model_writer=model,
                                   model_type="bpe", vocab_size=args.vocab_size,
                                   character_coverage=1.0, byte_fallback=True, num_threads=1,
                                   max_sentence_length=1 << 20, minloglevel=2)
    t_sp = time.perf_counter() - t0
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    print(f"  training (set-up, wall s): HF utf8 {t_hf:.1f}, corpustok ube {t_ube:.1f}, "
          f"SentencePiece bpe {t_sp:.1f}")
    ids = ours_utf8.encode_batch(lines).to_pylist()
    print(f"  lines where corpustok utf8 ids differ: from HF "
          f"{differ(ids, [e.ids for e in hf32.encode_batch(lines)])}, from tiktoken "
          f"{differ(ids, enc32.encode_ordinary_batch(lines))} of {len(lines)} (corpustok "
          "splits as the regex module does; HF's Oniguruma and tiktoken's Rust regex use older "
          "Unicode tables, e.g. Kirat Rai, Unicode 16, is no letter to them)")
    k = f"{args.vocab_size // 1000}k"
    rows = encode_contenders(ours_utf8, hf32, enc32, lines, arr, args.runs, f"utf8-{k}")
    rows.update(encode_contenders(ours_ube, None, None, lines, arr, args.runs, f"ube-{k}"))
    rows[f"SentencePiece bpe-{k} encode (list, 1 thread)"] = timed(
        lambda: sp.encode(lines, num_threads=1), args.runs)
    report(rows, nbytes, f"tiktoken loop encode_ordinary utf8-{k}")
    for name, tok in ((f"utf8-{k}", ours_utf8), (f"ube-{k}", ours_ube)):
        n = len(tok.encode_batch(arr).flatten())
        print(f"  {name}: {n} tokens, {nbytes / n:.2f} bytes/token")

    # 3. adversarial input ---------------------------------------------------------------------
    if args.no_adversarial:
        return
    print("\n[3] adversarial input, one document each (corpustok gpt2; 16 MB / 1 MB time ratio "
          "16 = linear)")
    rnd = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    cases = {"one letter 'a'": lambda n: "a" * n,
             "one punctuation '!'": lambda n: "!" * n,
             "letters, no spaces": lambda n: "".join(rnd.choice(letters) for _ in range(n)),
             "one CJK char (3 bytes)": lambda n: "性" * (n // 3)}
    print(f"  {'input':26s} {'1 MB s':>8s} {'16 MB s':>8s} {'ratio':>6s} {'tiktoken 1 MB s':>16s} "
          f"{'HF 1 MB s':>10s}")
    for name, make in cases.items():
        small, big = make(1 << 20), make(16 << 20)
        t1 = timed(lambda: ours.encode(small), 1)[1]
        t16 = timed(lambda: ours.encode(big), 1)[1]
        tt = timed(lambda: enc.encode_ordinary(small), 1)[1]
        th = timed(lambda: hf.encode(small), 1)[1]
        print(f"  {name:26s} {t1:8.3f} {t16:8.3f} {t16 / t1:6.1f} {tt:16.3f} {th:10.3f}")


if __name__ == "__main__":
    main()
