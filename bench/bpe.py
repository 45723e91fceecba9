"""Benchmark: corpustok byte-level BPE encoding vs HF tokenizers, tiktoken and SentencePiece.

    .venv/bin/python bench/bpe.py [--mb 24] [--train-mb 8] [--runs 3] [--parts 1,2,3,4,5]
                                  [--threads 1,2]

Single thread throughout (``RAYON_NUM_THREADS=1``; tiktoken's batch call with
``num_threads=1``), except corpustok's ``threads=N`` rows that ``--threads`` adds. Each line of the shared corpus is one document. Five parts (``--parts``
picks some):

1. The GPT-2 files (``tests/data/gpt2``): corpustok vs HF ``ByteLevelBPETokenizer`` vs tiktoken
   built from the same files (a plain loop of ``encode_ordinary``, its fastest single-thread
   mode, and ``encode_ordinary_batch``), all giving the same ids (checked).
2. 32K vocabularies trained on ``--train-mb`` MB of the same text: HF ``utf8``
   byte-level BPE (encoded by corpustok, HF and tiktoken), corpustok ``ube``, and
   SentencePiece BPE; training times are printed as set-up information. Then the three
   substrates side by side, each trained by corpustok (utf8, ube, utf16), timed in turns.
3. Linear scaling on adversarial input: 1 MB and 16 MB of one letter, of one punctuation
   character, of letters without spaces, of one CJK character; GPT-2, then the modern rank
   files (when present).
4. The split alone (``split_arrays``, one kernel call over the batch) for every named
   pre-tokenizer, against GPT-2's.
5. Against gigatoken: GPT-2 (its tokenizer.json, from ``BytePairTokenizer.to_hf()``) and the
   modern rank files of ``../shared/data/vocab/modern`` (skipped when absent): cl100k_base
   (whose pattern Llama 3 uses) and o200k_base. corpustok vs tiktoken (GPT-2's from its
   vocabulary, the others from the rank file with the pattern of
   :data:`corpustok.pretokenize.patterns.PATTERNS`), gigatoken and HF ``tokenizers`` (the
   tokenizer.json of ``to_hf()``), ids checked against corpustok's. gigatoken and HF cache
   the ids of chunks across calls, so their "fresh" rows time a new tokenizer per run, warmed
   up on 1 MB of other corpus text; gigatoken's "same text again" row shows what its cache
   gives on text it has seen. The corpustok/gigatoken ratio is also printed from fresh pairs
   timed back to back (the machine's speed drifts between rows on a shared host). With
   ``--threads``, corpustok's ``threads=N`` also runs fresh (each thread's cache made and
   warmed up first), with its wall-time ratio to one thread from fresh pairs.

Medians of ``--runs`` runs after a warm-up; wall-clock and process CPU time are both printed
because the machine may be shared (CPU time is the cost when a core is not time-sliced).
"""
import argparse
import io
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers is imported
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, SHARED_CORPUS, banner, cpu_seconds, timed  # noqa: E402

import corpustok  # noqa: E402
from corpustok.arrow import utf8_batch  # noqa: E402
from corpustok.bpe.tokenizer import BytePairTokenizer  # noqa: E402
from corpustok.pretokenize.patterns import GPT2_PATTERN, PATTERNS, split_arrays  # noqa: E402
from corpustok.substrate import bytes_to_unicode  # noqa: E402

GPT2 = REPO / "tests" / "data" / "gpt2"
MODERN = SHARED_CORPUS.parent / "vocab" / "modern"
MODERN_FILES = {"cl100k_base": "cl100k", "o200k_base": "o200k"}  # Llama 3 splits as cl100k



def report(rows, nbytes, ref):
    """Print MB/s (wall, CPU) per contender and the ratio of each to ``ref``'s CPU MB/s."""
    base = nbytes / rows[ref][1]
    print(f"  {'contender':48s} {'wall MB/s':>9s} {'CPU MB/s':>9s} {'x ' + ref[:18]:>20s}")
    for name, (wall, cpu) in rows.items():
        print(f"  {name:48s} {nbytes / wall / 1e6:9.2f} {nbytes / cpu / 1e6:9.2f} "
              f"{nbytes / cpu / base:20.2f}")


CORPORA = {"mix": None,  # every shared corpus file
           "multilingual": ("udhr.txt.xz", "gflanguages_samples.txt.xz"),  # 500+ languages
           "documents": "corpus-b"}  # corpus-b's rows, whole documents (Parquet)
CORPUS = ["mix"]  # --corpus


def corpus_sample(mb, skip_mb=0):
    """Lines from every file of the chosen shared corpus (:data:`CORPUS`), the same share of
    ``mb`` MB from each (the first ``mb`` MB of the sorted files would be one English manual),
    after the same share of ``skip_mb`` MB (text held out from a sample taken with
    ``skip_mb=0``)."""
    import lzma
    names = CORPORA[CORPUS[0]]
    if names == "corpus-b":
        return _documents(mb, skip_mb)
    files = sorted(p for p in SHARED_CORPUS.glob("*.txt.xz") if names is None or p.name in names)
    if not files:
        sys.exit(f"benchmark corpus not found: {SHARED_CORPUS}/*.txt.xz")
    lines = []
    for path in files:
        size = 0
        with lzma.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                if size >= (mb + skip_mb) * 1e6 / len(files):
                    break
                if size >= skip_mb * 1e6 / len(files):
                    lines.append(line)
                size += len(line.encode("utf-8"))
    return lines


def _documents(mb, skip_mb):
    """Whole documents of ``../shared/data/corpus-b`` (in file order): those starting after
    ``skip_mb`` MB, up to ``mb`` MB."""
    files = sorted((SHARED_CORPUS.parent / "corpus-b").glob("part-*.parquet"))
    if not files:
        sys.exit(f"benchmark corpus not found: {SHARED_CORPUS.parent / 'corpus-b'}")
    docs, size = [], 0
    for path in files:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=1024, columns=["text"]):
            for text in batch.column(0).to_pylist():
                if size >= (mb + skip_mb) * 1e6:
                    return docs
                if size >= skip_mb * 1e6:
                    docs.append(text)
                size += len(text.encode("utf-8"))
    return docs


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


THREADS = [1]  # corpustok rows with threads=N beyond 1 (--threads)


def threaded_rows(ours, arr, runs, label):
    """``encode_batch(arr, threads=N)`` for the thread counts of :data:`THREADS` above 1 (wall
    time is the figure; CPU time adds the threads up)."""
    return {f"corpustok encode_batch(Arrow, threads={n}) {label}": timed(
        lambda: ours.encode_batch(arr, threads=n), runs) for n in THREADS if n > 1}


def encode_contenders(ours, hf, enc, lines, arr, runs, label):
    rows = {f"corpustok encode_batch(list[str]) {label}": timed(lambda: ours.encode_batch(lines),
                                                               runs),
            f"corpustok encode_batch(Arrow) {label}": timed(lambda: ours.encode_batch(arr), runs),
            **threaded_rows(ours, arr, runs, label)}
    if enc is not None:
        rows[f"tiktoken loop encode_ordinary {label}"] = timed(
            lambda: [enc.encode_ordinary(t) for t in lines], runs)
        rows[f"tiktoken encode_ordinary_batch {label}"] = timed(
            lambda: enc.encode_ordinary_batch(lines, num_threads=1), runs)
    if hf is not None:
        rows[f"HF encode_batch {label}"] = timed(lambda: hf.encode_batch(lines), runs)
    return rows


def split_speeds(arr, nbytes, runs):
    """MB/s of the split alone for every named pre-tokenizer and the ratio to GPT-2's CPU
    MB/s; the patterns take turns in each run, so that machine drift hits them alike."""
    batch = utf8_batch(arr)
    chunks = {name: len(split_arrays(batch.data, batch.offsets, name)[0]) for name in PATTERNS}
    wall, cpu = {name: [] for name in PATTERNS}, {name: [] for name in PATTERNS}
    for _ in range(runs):
        for name in PATTERNS:
            w, c = time.perf_counter(), time.process_time()
            split_arrays(batch.data, batch.offsets, name)
            wall[name].append(time.perf_counter() - w)
            cpu[name].append(time.process_time() - c)
    speed = {name: nbytes / statistics.median(cpu[name]) / 1e6 for name in PATTERNS}
    print(f"  {'pre-tokenizer':14s} {'wall MB/s':>9s} {'CPU MB/s':>9s} {'x gpt2':>7s} "
          f"{'chunks':>10s}")
    for name in PATTERNS:
        print(f"  {name:14s} {nbytes / statistics.median(wall[name]) / 1e6:9.1f} "
              f"{speed[name]:9.1f} {speed[name] / speed['gpt2']:7.2f} {chunks[name]:10d}")


def timed_cold(make, fn, runs):
    """:func:`timed` for tokenizers that cache chunk ids across calls (all of them): each run
    times ``fn`` on a fresh ``make()`` (warmed up on other text, untimed), so that the text is
    not timed against a cache filled by itself."""
    wall, cpu = [], []
    for _ in range(runs):
        tok = make()
        w, c = time.perf_counter(), time.process_time()
        fn(tok)
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def fresh_corpustok(path, held_out, threads=1):
    """A new corpustok tokenizer warmed up on ``held_out`` with ``threads`` threads (so that
    each thread's cache is made and seeded before the timing)."""
    tok = corpustok.load(path)
    tok.encode_batch(held_out, threads=threads)
    return tok


def fresh_thread_rows(path, arr, held_out, runs, stem):
    """``threads=N`` rows on text the tokenizer has not seen, and the wall-time ratio to one
    thread from fresh pairs timed back to back (in turns first)."""
    rows = {}
    for n in (n for n in THREADS if n > 1):
        def fresh(k):
            return timed_cold(lambda: fresh_corpustok(path, held_out, k),
                              lambda tok: tok.encode_batch(arr, threads=k), 1)[0]
        rows[f"corpustok encode_batch(Arrow, threads={n}), fresh {stem}"] = timed_cold(
            lambda: fresh_corpustok(path, held_out, n),
            lambda tok: tok.encode_batch(arr, threads=n), runs)
        print(f"  {stem}: threads={n} fresh, wall time of one thread / {n}, "
              + pairs_in_turns(lambda: fresh(1), lambda: fresh(n), runs))
    return rows


def pairs_in_turns(first, second, runs):
    """``first() / second()`` over ``runs`` pairs timed back to back, which of the two goes
    first alternating (the host's speed drifts between rows): a line of their median and
    each."""
    ratios = []
    for r in range(runs):
        a, b = (first(), second()) if r % 2 == 0 else (second(), first())[::-1]
        ratios.append(a / b)
    return (f"{runs} pairs back to back: median {statistics.median(ratios):.2f} ("
            + ", ".join(f"{r:.2f}" for r in ratios) + ")")


def rank_file_tiktoken(stem):
    """tiktoken's Encoding of a modern rank file, with its pattern."""
    import tiktoken
    import tiktoken.load
    ranks = tiktoken.load.load_tiktoken_bpe(str(MODERN / f"{stem}.tiktoken"))
    return tiktoken.Encoding(stem, pat_str=PATTERNS[MODERN_FILES[stem]], special_tokens={},
                             mergeable_ranks=ranks)


def modern_contenders(stem, path, enc, lines, arr, held_out, runs):
    """Rows and id-mismatch counts (vs corpustok) for one tokenizer file (a rank file, or an
    HF tokenizer.json) and its tiktoken ``enc``; a contender whose package is missing is named
    and skipped. ``held_out``: other corpus lines, to warm up the tokenizers that cache (lazy
    regex states and a chunk cache, as after a long run)."""
    from tokenizers import Tokenizer

    ours = corpustok.load(path)
    ids = ours.encode_batch(lines).to_pylist()
    others = {"tiktoken": enc.encode_ordinary_batch(lines, num_threads=1)}
    rows = {f"corpustok encode_batch(list[str]) {stem}": timed(lambda: ours.encode_batch(lines),
                                                              runs),
            f"corpustok encode_batch(Arrow) {stem}": timed(lambda: ours.encode_batch(arr), runs),
            **threaded_rows(ours, arr, runs, stem),
            f"corpustok encode_batch(Arrow), fresh {stem}": timed_cold(
                lambda: fresh_corpustok(path, held_out), lambda tok: tok.encode_batch(arr),
                runs),
            **fresh_thread_rows(path, arr, held_out, runs, stem),
            f"tiktoken loop encode_ordinary {stem}": timed(
                lambda: [enc.encode_ordinary(t) for t in lines], runs),
            f"tiktoken encode_ordinary_batch {stem}": timed(
                lambda: enc.encode_ordinary_batch(lines, num_threads=1), runs)}
    try:
        import gigatoken
    except ImportError:
        gigatoken = None
        print("  gigatoken not installed: its rows are skipped (pip install gigatoken==0.10.0)")
    if gigatoken is not None:
        def giga():
            tok = (gigatoken.Tokenizer.from_tiktoken(path) if path.suffix == ".tiktoken" else
                   gigatoken.Tokenizer(str(path)))
            tok.encode_batch(held_out, parallel=False)
            return tok
        warm = giga()
        others["gigatoken"] = warm.encode_batch_list(lines, parallel=False)
        rows[f"gigatoken encode_batch, fresh {stem}"] = timed_cold(
            giga, lambda tok: tok.encode_batch(lines, parallel=False), runs)
        rows[f"gigatoken encode_batch, same text again {stem}"] = timed(
            lambda: warm.encode_batch(lines, parallel=False), runs)
        ratio = pairs_in_turns(
            lambda: timed_cold(giga, lambda tok: tok.encode_batch(lines, parallel=False), 1)[1],
            lambda: timed_cold(lambda: fresh_corpustok(path, held_out),
                               lambda tok: tok.encode_batch(arr), 1)[1], runs)
        print(f"  {stem}: corpustok's speed / gigatoken's, both fresh, CPU time, {ratio}")
    doc = json.dumps(ours.to_hf())  # our export: the same ids in HF (tests/formats/test_hf_export.py)
    hf = Tokenizer.from_str(doc)
    others["HF"] = [e.ids for e in hf.encode_batch(lines)]
    def hf_fresh():
        tok = Tokenizer.from_str(doc)
        tok.encode_batch(held_out)
        return tok
    rows[f"HF encode_batch, fresh {stem}"] = timed_cold(
        hf_fresh, lambda tok: tok.encode_batch(lines), runs)
    print(f"  {stem}: lines where ids differ from corpustok: "
          + ", ".join(f"{k} {differ(ids, v)}" for k, v in others.items())
          + f" of {len(lines)}")
    return rows


def package_version(name):
    """The installed version of a distribution (gigatoken has no ``__version__``)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(name)
    except PackageNotFoundError:
        return "(not installed)"


def trained(args, lines, arr, nbytes):
    """Part 2: 32K vocabularies trained on the same text, encoded by each contender."""
    import sentencepiece as spm
    from tokenizers import ByteLevelBPETokenizer

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
    substrate_speeds({s: (ours_ube if s == "ube" else
                          BytePairTokenizer.train(train_lines, args.vocab_size, substrate=s))
                      for s in ("utf8", "ube", "utf16")}, arr, nbytes, args.runs)


def substrate_speeds(toks, arr, nbytes, runs):
    """CPU MB/s of ``encode_batch`` for each substrate's tokenizer (trained by corpustok on the
    same text, same size), in turns each run, and the ratio to utf8's (the goal: within 10%)."""
    cpu = {s: [] for s in toks}
    for tok in toks.values():
        tok.encode_batch(arr)  # warm-up: compile, fill the cache as every later run finds it
    for _ in range(runs):
        for s, tok in toks.items():
            cpu[s].append(cpu_seconds(lambda: tok.encode_batch(arr)))
    speed = {s: nbytes / statistics.median(cpu[s]) / 1e6 for s in toks}
    print("  substrates, each trained by corpustok on the same text (CPU MB/s, x utf8): " +
          ", ".join(f"{s} {speed[s]:.1f} ({speed[s] / speed['utf8']:.2f}x)" for s in toks))


def adversarial(ours, enc, hf, name="gpt2"):
    """Part 3: linear scaling on adversarial input (``hf``: None where not timed)."""
    print(f"\n[3] adversarial input, one document each (corpustok {name}; 16 MB / 1 MB time "
          "ratio 16 = linear)")
    rnd = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    cases = {"one letter 'a'": lambda n: "a" * n,
             "one punctuation '!'": lambda n: "!" * n,
             "letters, no spaces": lambda n: "".join(rnd.choice(letters) for _ in range(n)),
             "one CJK char (3 bytes)": lambda n: "性" * (n // 3)}
    print(f"  {'input':26s} {'1 MB s':>8s} {'16 MB s':>8s} {'ratio':>6s} {'tiktoken 1 MB s':>16s} "
          f"{'HF 1 MB s':>10s}")
    for case, make in cases.items():
        small, big = make(1 << 20), make(16 << 20)
        # Arrow out (what the pipeline writes): a list of 5 M Python ints would time tolist().
        # The host's speed drifts: each 16 MB run is paired with the median of five 1 MB runs
        # just before it, and the ratio is the median of the three pairs' ratios.
        ours.encode_batch([small])
        ours.encode_batch([big])
        ones, sixteens = [], []
        for _ in range(3):
            ones.append(statistics.median(cpu_seconds(lambda: ours.encode_batch([small]))
                                          for _ in range(5)))
            sixteens.append(cpu_seconds(lambda: ours.encode_batch([big])))
        t1, t16 = statistics.median(ones), statistics.median(sixteens)
        ratio = statistics.median(b / a for a, b in zip(ones, sixteens))
        tt = timed(lambda: enc.encode_ordinary(small), 1)[1]
        th = f"{timed(lambda: hf.encode(small), 1)[1]:10.3f}" if hf else f"{'-':>10s}"
        print(f"  {case:26s} {t1:8.3f} {t16:8.3f} {ratio:6.1f} {tt:16.3f} {th}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=24, help="MB of corpus text to encode")
    ap.add_argument("--train-mb", type=float, default=8, help="MB to train the 32K vocabularies")
    ap.add_argument("--vocab-size", type=int, default=32000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--corpus", choices=CORPORA, default="mix",
                    help="text: every shared corpus file (mix) or the UDHR and Google Fonts' "
                    "language samples (multilingual, 500+ languages) (default: %(default)s)")
    ap.add_argument("--parts", default="1,2,3,4,5",
                    help="comma-separated parts to run (see the module docstring)")
    ap.add_argument("--threads", default="1",
                    help="comma-separated thread counts for corpustok's encode_batch rows, "
                         "e.g. 1,2 (default: %(default)s)")
    args = ap.parse_args()
    parts = {int(p) for p in args.parts.split(",")}
    CORPUS[:] = [args.corpus]
    THREADS[:] = sorted({int(n) for n in args.threads.split(",")})

    from tokenizers import ByteLevelBPETokenizer

    banner("byte-level BPE encode, single thread",
           ("numba", "numpy", "pyarrow", "tokenizers", "tiktoken", "sentencepiece"))
    lines = corpus_sample(args.mb)
    nbytes = sum(len(t.encode("utf-8")) for t in lines)
    arr = pa.array(lines, pa.large_string())
    print(f"input: shared corpus ({args.corpus}), an equal share of each of its files, "
          f"{len(lines)} lines, "
          f"{nbytes / 1e6:.1f} MB; "
          f"medians of {args.runs} runs")

    ours = enc = hf = None
    if parts & {1, 3}:
        ours = BytePairTokenizer.from_hf(GPT2 / "vocab.json", GPT2 / "merges.txt")
        hf = ByteLevelBPETokenizer(str(GPT2 / "vocab.json"), str(GPT2 / "merges.txt"),
                                   add_prefix_space=False)
        enc = tiktoken_from_vocab(json.loads((GPT2 / "vocab.json").read_text("utf-8")), "gpt2")
    if 1 in parts:
        ids = ours.encode_batch(lines).to_pylist()
        print(f"\n[1] GPT-2 vocabulary (50257); lines where corpustok ids differ from tiktoken: "
              f"{differ(ids, enc.encode_ordinary_batch(lines))}, from HF: "
              f"{differ(ids, [e.ids for e in hf.encode_batch(lines)])} of {len(lines)}")
        report(encode_contenders(ours, hf, enc, lines, arr, args.runs, "gpt2"), nbytes,
               "tiktoken loop encode_ordinary gpt2")
    if 2 in parts:
        trained(args, lines, arr, nbytes)
    if 3 in parts:
        adversarial(ours, enc, hf)
        for stem in MODERN_FILES:  # rank files: the buckets may refuse a chunk (then the heap)
            if (MODERN / f"{stem}.tiktoken").exists():
                adversarial(corpustok.load(MODERN / f"{stem}.tiktoken"),
                            rank_file_tiktoken(stem), None, stem)
    if 4 in parts:
        print(f"\n[4] the split alone (corpustok split_arrays, one call over the "
              f"{len(lines)}-line batch)")
        split_speeds(arr, nbytes, args.runs)
    if 5 in parts:
        held_out = corpus_sample(1, skip_mb=args.mb)
        print("\n[5] against gigatoken: GPT-2 and the modern rank files; gigatoken "
              f"{package_version('gigatoken')}; \"fresh\": a new tokenizer per run, warmed up on "
              f"{sum(len(t.encode()) for t in held_out) / 1e6:.1f} MB of other corpus text")
        with tempfile.TemporaryDirectory() as tmp:  # GPT-2 as a tokenizer.json, for gigatoken
            gpt2_json = Path(tmp) / "tokenizer.json"
            gpt2_json.write_text(json.dumps(BytePairTokenizer.from_hf(
                GPT2 / "vocab.json", GPT2 / "merges.txt").to_hf()), "utf-8")
            gpt2_enc = tiktoken_from_vocab(json.loads((GPT2 / "vocab.json").read_text("utf-8")),
                                           "gpt2")
            report(modern_contenders("gpt2", gpt2_json, gpt2_enc, lines, arr, held_out,
                                     args.runs), nbytes, "tiktoken loop encode_ordinary gpt2")
        for stem in MODERN_FILES:
            if not (MODERN / f"{stem}.tiktoken").exists():
                print(f"  {MODERN / (stem + '.tiktoken')} not found: skipped")
                continue
            report(modern_contenders(stem, MODERN / f"{stem}.tiktoken", rank_file_tiktoken(stem),
                                     lines, arr, held_out, args.runs), nbytes,
                   f"tiktoken loop encode_ordinary {stem}")


if __name__ == "__main__":
    main()
