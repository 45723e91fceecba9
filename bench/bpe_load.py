"""Benchmark: ``corpustok.load()`` of a large byte-level BPE ``tokenizer.json`` (issue 12,
point 14).

    .venv/bin/python bench/bpe_load.py [--sizes 1000000,10000000] [--pairs] [--dir DIR]
                                       [--profile]

Writes a synthetic HF ``tokenizer.json`` (ByteLevel pre-tokenizer, BPE model) of ``N`` vocab
entries per size: the 256 byte symbols, ``N - 257`` merges, each making a new token from an
earlier token (short ones more often) and a byte symbol (Zipf-like) or another short token,
and ``<|endoftext|>`` as an added token. Merges are ``"left right"`` strings, as GPT-2 and
older ``tokenizers`` write them, or ``[left, right]`` pairs with ``--pairs`` (``tokenizers``
>= 0.20). Seeded, so every run writes the same file; with ``--dir`` the files are kept there
and reused by later runs (building the 10M file takes a few minutes), otherwise they go to a
temporary folder that is removed.

Each load runs in a fresh process (``corpustok`` imported first, its import not counted),
which prints the seconds of ``corpustok.load(path)``, its peak RSS (``ru_maxrss``), the RSS
after import and the RSS the loaded tokenizer keeps, and checks that encoding and decoding
a sample round-trips. A 1,000-entry file is loaded first, so that the Numba cache is warm.
``--profile`` prints a cProfile summary of the largest load. Run with ``PYTHONPATH=DIR`` to
measure another copy of the package (e.g. the previous commit's).
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import banner  # noqa: E402

from corpustok.substrate import bytes_to_unicode  # noqa: E402

CHILD = r"""
import json, resource, sys, time
import corpustok, corpustok.bpe.tokenizer, corpustok.wordpiece.tokenizer

def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

path, profile = sys.argv[1], sys.argv[2] == "1"
base = rss_mib()
t = time.perf_counter()
if profile:
    import cProfile, pstats
    prof = cProfile.Profile()
    tok = prof.runcall(corpustok.load, path)
else:
    tok = corpustok.load(path)
seconds = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
text = "Hello world, the quick brown fox. <|endoftext|> Ünïcödé 性能 " * 10
ids = tok.encode(text)
assert tok.decode(ids) == text, "round trip"
if profile:
    pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(18)
print(json.dumps({"seconds": seconds, "peak_mib": peak, "base_mib": base,
                  "kept_mib": rss_mib() - base, "vocab": tok.vocab_size,
                  "module": corpustok.__file__}))
"""


def synthetic_tokens(n, seed=0):
    """``(tokens, merges)``: 256 byte symbols, then ``n - 257`` tokens each made by a merge
    of two earlier tokens (the last vocab entry is left for ``<|endoftext|>``)."""
    rng = np.random.default_rng(seed)
    alphabet = bytes_to_unicode()
    weights = 1.0 / np.arange(1, 257) ** 1.1
    weights /= weights.sum()
    tokens = list(alphabet)
    seen = set(tokens)
    merges = []
    want = n - 1
    while len(tokens) < want:
        cur = len(tokens)
        k = max(min(want - cur, cur), 1024)  # picks among the tokens made so far
        left = (cur * rng.random(k) ** 2).astype(np.int64).tolist()
        sym = rng.choice(256, size=k, p=weights).tolist()
        other = np.minimum((cur * rng.random(k) ** 6).astype(np.int64), cur - 1).tolist()
        use_sym = (rng.random(k) < 0.6).tolist()
        for a, s, o, u in zip(left, sym, other, use_sym):
            ta = tokens[a]
            tb = alphabet[s] if u else tokens[o]
            t = ta + tb
            if t not in seen:
                seen.add(t)
                tokens.append(t)
                merges.append((ta, tb))
                if len(tokens) == want:
                    break
    return tokens, merges


def write_tokenizer_json(path, n, pairs):
    tokens, merges = synthetic_tokens(n)
    eot = "<|endoftext|>"
    dumps = json.dumps
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"version": "1.0", "truncation": null, "padding": null, "added_tokens": '
                f'[{{"id": {len(tokens)}, "content": "{eot}", "single_word": false, '
                '"lstrip": false, "rstrip": false, "normalized": false, "special": true}], '
                '"normalizer": null, "pre_tokenizer": {"type": "ByteLevel", '
                '"add_prefix_space": false, "trim_offsets": true, "use_regex": true}, '
                '"post_processor": null, "decoder": {"type": "ByteLevel"}, "model": '
                '{"type": "BPE", "dropout": null, "unk_token": null, '
                '"continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": false, '
                '"byte_fallback": false, "ignore_merges": false, "vocab": {')
        f.write(", ".join(f"{dumps(t, ensure_ascii=False)}: {i}" for i, t in enumerate(tokens)))
        f.write(f', "{eot}": {len(tokens)}}}, "merges": [')
        if pairs:
            f.write(", ".join(dumps(m, ensure_ascii=False) for m in merges))
        else:
            f.write(", ".join(dumps(f"{a} {b}", ensure_ascii=False) for a, b in merges))
        f.write("]}}")
    return sum(map(len, tokens)) / len(tokens)


def run_load(path, profile=False):
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), "1" if profile else "0"],
                         capture_output=True, text=True, cwd=path.parent)  # not the repo's copy
    if out.returncode:
        sys.exit(f"load of {path} failed:\n{out.stderr}")
    if profile:
        print(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000000,10000000", help="vocab entries, comma-separated")
    ap.add_argument("--pairs", action="store_true", help="merges as [left, right] pairs")
    ap.add_argument("--dir", help="keep (and reuse) the generated files here")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    banner("corpustok.load() of a synthetic byte-level BPE tokenizer.json", ("numpy", "numba"))
    tmp = None
    if args.dir:
        folder = Path(args.dir)
        folder.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="bpe_load_")
        folder = Path(tmp.name)
    try:
        for n in [1000, *sizes]:
            path = folder / f"bpe_{n}{'_pairs' if args.pairs else ''}.json"
            if not path.exists():
                t = time.perf_counter()
                avg = write_tokenizer_json(path, n, args.pairs)
                print(f"  wrote {path.name}: {path.stat().st_size / 1e6:,.0f} MB, "
                      f"{avg:.1f} symbols per token, {time.perf_counter() - t:.0f} s",
                      flush=True)
            r = run_load(path, args.profile and n == sizes[-1])
            if n == 1000:
                print(f"using {r['module']}")
                continue
            size = path.stat().st_size
            print(f"{n:>11,} entries ({size / 1e6:5,.0f} MB): load {r['seconds']:7.2f} s "
                  f"({r['seconds'] / n * 1e6:.2f} us/entry), peak RSS {r['peak_mib']:7,.0f} MiB "
                  f"({(r['peak_mib'] - r['base_mib']) * 2**20 / n:,.0f} B/entry above the "
                  f"{r['base_mib']:.0f} MiB after import; file {size / n:.0f} B/entry), kept "
                  f"{r['kept_mib']:,.0f} MiB", flush=True)
    finally:
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    main()
