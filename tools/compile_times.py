"""Numba compile time per user entry point, on a cold cache.

    .venv/bin/python tools/compile_times.py [NAME ...] [--list] [--kernels N] [--shared]
                                            [--repo DIR]

Each entry point runs in a fresh subprocess whose ``NUMBA_CACHE_DIR`` is a new empty folder
(created here and removed afterwards; the repository's own ``__pycache__`` caches are neither
read nor written), so its time is what a user pays on a fresh install. Columns:

- ``load``: import plus loading or building the tokenizer (its table kernels compile here);
- ``first``: the entry point's first call (nearly all of it compilation);
- ``again``: the same call again (warm: what is not compilation);
- ``cpu``: the subprocess's CPU seconds (the fairer figure on a shared machine; compilation
  is single-threaded);
- ``specs``: compiled specialisations (dispatcher signatures, Numba's own overloads included);
  ``dup``: kernels of this project compiled for more than one signature.

``--kernels N`` also prints, per entry point, the N kernels with the most exclusive compile
time (nested compiles subtracted) and every kernel compiled more than once, with its
signatures' differences. ``--shared`` runs the entry points in order on one cache, so each
row is what that entry point adds to the ones before it. ``cli-tokenize`` times the whole
``corpustok tokenize`` command on 1 MB of generated text (``first`` is its wall time, ``cpu``
its CPU time). ``--repo DIR`` measures another checkout (a copy of the source tree, e.g. the
commit before a change) with this script, for before/after tables: run both in turns, as the
times drift with the machine's load.
"""
import argparse
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent  # the checkout measured (--repo)
DATA = REPO / "tests" / "data"

SAMPLE = ("Kernels compile on first use: 1 2 3, 12345 don't we'll, ÅÄÖ éè, Ελληνικά, кириллица, "
          "漢字かな, 한국어, हिन्दी, ไทย, 😀👍🏽 \t\n  end   " + "x" * 300 + " ... !!!\n")
TEXTS = [SAMPLE, "a second, longer document " * 4, "", "short"]


def _gpt2():
    import corpustok
    return corpustok.load(DATA / "gpt2")


def _tiktoken(name):
    import corpustok
    return lambda: corpustok.load(DATA / "gpt2_4k.tiktoken", pretokenizer=name)


def _small_bpe(substrate):
    """A BytePairTokenizer of the substrate's alphabet and a few ASCII merges."""
    def build():
        from corpustok import BytePairTokenizer
        from corpustok.substrate import alphabet
        vocab = {s: i for i, s in enumerate(sorted(alphabet(substrate)))}
        merges = []
        for a, b in [("t", "h"), ("th", "e"), ("i", "n"), ("e", "r"), ("a", "n")]:
            if a in vocab and b in vocab and a + b not in vocab:
                vocab[a + b] = len(vocab)
                merges.append((a, b))
        return BytePairTokenizer(vocab, merges, substrate=substrate)
    return build


def _package_file(module, rel):
    """A file inside an installed package of the test extra, found by the package's folder
    (the package itself is never imported: diffsynth's own dependencies are not installed)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{module} is not installed (./run_local.sh test installs it)")
    return Path(spec.submodule_search_locations[0]) / rel


def _sentencepiece(module, rel):
    """A SentencePiece ``.model`` file that a package of the test extra ships (a fresh clone
    has it after ``./run_local.sh test``): Mistral 7B v0.1's BPE model (mistral-common), T5's
    Unigram model (diffsynth 1.1.9)."""
    def build():
        import corpustok  # here, as in every setup: its import is part of the 'load' column
        return corpustok.load(_package_file(module, rel))
    return build


def _wordpiece():
    import corpustok
    return corpustok.load(DATA / "bert-base-uncased" / "vocab.txt")


def _batch_and_stream(tok):
    """What ``corpustok tokenize`` warms up: a batch, and a stream for a long document."""
    return _encode_batch(tok), _stream(tok)


def _encode(tok):
    return tok.encode(SAMPLE)


def _encode_batch(tok):
    import pyarrow as pa
    return tok.encode_batch(pa.array(TEXTS + [None], pa.string()))


def _stream(tok):
    enc = tok.stream()
    out = []
    for k in range(0, len(SAMPLE), 7):
        out += enc.feed(SAMPLE[k:k + 7])
    return out + enc.finish()


def _decode(tok):
    ids = [i for i in range(1, 2000, 13)]
    text = tok.decode(ids)
    tok.decode_batch([ids, ids[:5], []])
    dec = tok.decode_stream()
    parts = [dec.feed(ids[k:k + 3]) for k in range(0, len(ids), 3)]
    return text, "".join(parts) + dec.finish()


def _texts():
    return [SAMPLE * 3, *TEXTS] * 20


def _train(_):
    from corpustok import BytePairTokenizer
    return BytePairTokenizer.train(_texts(), 600, substrate="ube")


def _count(_):
    import pyarrow as pa

    from corpustok.bpe.train import ChunkCounts
    a = ChunkCounts().add(pa.array(_texts(), pa.string()))
    b = ChunkCounts().add(_texts()[:3])
    return len(a.merge(b))


def _none():
    return None


# name: (setup, call, what it covers)
ENTRY_POINTS = {
    "bpe-gpt2": (_gpt2, _encode, "GPT-2 files (vocab.json + merges.txt), encode()"),
    "bpe-cl100k": (_tiktoken("cl100k"), _encode, "rank file, cl100k split, encode()"),
    "bpe-o200k": (_tiktoken("o200k"), _encode, "rank file, o200k split, encode()"),
    "encode-batch": (_gpt2, _encode_batch, "GPT-2, encode_batch(pyarrow array)"),
    "stream": (_gpt2, _stream, "GPT-2, stream() feed/finish"),
    "decode": (_gpt2, _decode, "GPT-2, decode, decode_batch, decode_stream"),
    "bpe-ube": (_small_bpe("ube"), _encode, "BytePairTokenizer(vocab, merges, 'ube'), encode()"),
    "bpe-utf16": (_small_bpe("utf16"), _encode, "the same on 'utf16'"),
    "wordpiece": (_wordpiece, _batch_and_stream, "bert vocab.txt, encode_batch and stream()"),
    "sp-bpe": (_sentencepiece("mistral_common", "data/tokenizer.model.v1"), _batch_and_stream,
               "SentencePiece BPE .model (Mistral 7B v0.1), encode_batch and stream()"),
    "sp-unigram": (_sentencepiece("diffsynth", "tokenizer_configs/flux/tokenizer_2/spiece.model"),
                   _batch_and_stream,
                   "SentencePiece Unigram .model (T5), encode_batch and stream()"),
    "count": (_none, _count, "ChunkCounts add/merge (the train job's counting)"),
    "train-ube": (_none, _train, "BytePairTokenizer.train(texts, 600, substrate='ube')"),
    "cli-tokenize": (None, None, "corpustok tokenize, GPT-2, 1 MB of text (wall time)"),
}


class _Compiles:
    """Numba compile events: exclusive seconds (nested compiles subtracted), the part of them
    spent holding the LLVM lock (optimization and machine code), and signatures, per
    dispatcher."""

    def __init__(self):
        from numba.core import event
        self.stack = []  # [start, nested seconds, LLVM seconds] per compile under way
        self.records = []  # (name, module, argument types, exclusive s, LLVM s)
        self.llvm = [0, 0.0]  # lock depth, start of the outermost hold

        class Compile(event.Listener):
            def on_start(_, ev):
                self.stack.append([time.perf_counter(), 0.0, 0.0])

            def on_end(_, ev):
                t0, nested, llvm = self.stack.pop()
                span = time.perf_counter() - t0
                if self.stack:
                    self.stack[-1][1] += span
                d = ev.data.get("dispatcher")
                fn = getattr(d, "py_func", None)
                args = ev.data.get("args") or ()
                self.records.append((getattr(fn, "__qualname__", str(d)),
                                     getattr(fn, "__module__", ""),
                                     [str(a) for a in args], span - nested, llvm))

        class Llvm(event.Listener):
            def on_start(_, ev):
                self.llvm[0] += 1
                if self.llvm[0] == 1:
                    self.llvm[1] = time.perf_counter()

            def on_end(_, ev):
                self.llvm[0] -= 1
                if self.llvm[0] == 0 and self.stack:
                    self.stack[-1][2] += time.perf_counter() - self.llvm[1]

        event.register("numba:compile", Compile())
        event.register("numba:llvm_lock", Llvm())

    def summary(self, top):
        own, llvm, sigs = {}, {}, {}
        for name, module, sig, t, tl in self.records:
            key = f"{module.rsplit('.', 1)[-1]}.{name}"
            own[key] = own.get(key, 0.0) + t
            llvm[key] = llvm.get(key, 0.0) + tl
            if module.startswith("corpustok"):
                sigs.setdefault(key, []).append(sig)
        dups = {k: _differences(v) for k, v in sigs.items() if len(v) > 1}
        ranked = sorted(own.items(), key=lambda kv: -kv[1])[:top]
        return {"specs": len(self.records), "dup": len(dups),
                "llvm": sum(llvm.values()), "compile": sum(own.values()),
                "top": [(k, round(t, 2), round(llvm[k], 2), len(sigs.get(k, ())))
                        for k, t in ranked],
                "dups": dups if top else {}}


def _differences(sigs):
    """Each signature as only its arguments that differ between them (``#i type``)."""
    differ = [i for i in range(max(map(len, sigs)))
              if len({s[i] if i < len(s) else None for s in sigs}) > 1]
    return [", ".join(f"#{i} {s[i] if i < len(s) else '-'}"[:120] for i in differ)
            for s in sigs]


def _corpus_file(path, mb=1.0):
    """About ``mb`` MB of varied generated text, one document per line."""
    import random
    rng = random.Random(0)
    words = [w.strip(".,:;!?()") for w in SAMPLE.split()] + \
        "the of and to in is that it for was on are with as by this be at".split()
    lines, size = [], 0
    while size < mb * 1e6:
        n = rng.randint(5, 80)
        line = " ".join(rng.choice(words) + (str(rng.randint(0, 999)) if rng.random() < .05
                                             else "") for _ in range(n)) + ".\n"
        lines.append(line)
        size += len(line.encode())
    Path(path).write_text("".join(lines), encoding="utf-8")


def _cli_tokenize(tmp):
    text = os.path.join(tmp, "corpus.txt")
    _corpus_file(text)
    cli = [sys.executable, "-c", "import sys; from corpustok.pipeline.cli import run; "
           "sys.argv[0] = 'corpustok'; sys.exit(run())"]
    t0 = time.perf_counter()
    subprocess.run(cli + ["tokenize", "--tokenizer", str(DATA / "gpt2"), "--out",
                          os.path.join(tmp, "out"), "--no-progress", text],
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def child(name, top, repo):
    global REPO, DATA
    REPO, DATA = Path(repo), Path(repo) / "tests" / "data"
    if name == "cli-tokenize":
        with tempfile.TemporaryDirectory() as tmp:
            first = _cli_tokenize(tmp)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {"load": 0.0, "first": first, "again": float("nan"),
                "cpu": usage.ru_utime + usage.ru_stime, "specs": -1, "dup": -1, "top": [],
                "dups": {}, "llvm": 0.0, "compile": 0.0}
    setup, call, _ = ENTRY_POINTS[name]
    compiles = _Compiles()
    t0 = time.perf_counter()
    tok = setup()
    t1 = time.perf_counter()
    call(tok)
    t2 = time.perf_counter()
    call(tok)
    t3 = time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"load": t1 - t0, "first": t2 - t1, "again": t3 - t2,
            "cpu": usage.ru_utime + usage.ru_stime, **compiles.summary(top)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help=f"entry points (default: all): "
                                             f"{', '.join(ENTRY_POINTS)}")
    ap.add_argument("--list", action="store_true", help="list the entry points and exit")
    ap.add_argument("--kernels", type=int, default=0, metavar="N",
                    help="print each entry point's N costliest kernels and its duplicates")
    ap.add_argument("--shared", action="store_true",
                    help="one cache for all entry points, in order (incremental cost)")
    ap.add_argument("--repo", default=str(REPO),
                    help="the checkout to measure (default: the one holding this script)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    repo = str(Path(args.repo).resolve())
    if args.child:
        print("RESULT " + json.dumps(child(args.child, args.kernels, repo)), flush=True)
        return
    if args.list:
        for name, (*_, what) in ENTRY_POINTS.items():
            print(f"{name:14s} {what}")
        return
    names = args.names or list(ENTRY_POINTS)
    unknown = [n for n in names if n not in ENTRY_POINTS]
    if unknown:
        ap.error(f"unknown entry point(s) {', '.join(unknown)}; --list shows them")
    root = tempfile.mkdtemp(prefix="corpustok-compile-")
    print(f"{'entry point':14s} {'load':>7s} {'first':>7s} {'again':>7s} {'cpu':>7s} "
          f"{'specs':>5s} {'dup':>4s}   (seconds; fresh Numba cache "
          f"{'shared, in order' if args.shared else 'per entry point'}; {repo})", flush=True)
    total = 0.0
    try:
        for name in names:
            cache = os.path.join(root, "shared" if args.shared else name)
            os.makedirs(cache, exist_ok=True)
            env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": repo}
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name,
                                   "--kernels", str(args.kernels), "--repo", repo], env=env,
                                  cwd=repo, capture_output=True, text=True)
            line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
            if proc.returncode or not line:
                print(f"{name:14s} FAILED (exit {proc.returncode})\n{proc.stderr[-3000:]}",
                      flush=True)
                continue
            r = json.loads(line[-1][7:])
            total += r["load"] + r["first"]
            print(f"{name:14s} {r['load']:7.1f} {r['first']:7.1f} {r['again']:7.2f} "
                  f"{r['cpu']:7.1f} {r['specs']:5d} {r['dup']:4d}", flush=True)
            if r["top"]:
                print(f"    compiling {r['compile']:.1f} s, of which LLVM {r['llvm']:.1f} s; "
                      f"per kernel (nested compiles excluded): seconds, LLVM's part")
            for k, t, tl, n in r["top"]:
                print(f"    {t:7.2f} {tl:6.2f}  {k}" + (f"  ({n} signatures)" if n > 1 else ""))
            for k, sigs in r["dups"].items():
                print(f"    compiled {len(sigs)}x: {k}")
                for s in sigs:
                    print(f"        {s}")
        print(f"{'total':14s} {total:7.1f}  (load + first)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
