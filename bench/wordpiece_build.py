"""Benchmark: WordPiece table build time against vocabulary size (issue 12, point 14).

    .venv/bin/python bench/wordpiece_build.py [--sizes 100000,300000,1000000] [--wide K]
                                              [--profile]

Builds synthetic vocabularies (seeded: BERT specials, every alphabet character alone and as a
``##`` piece, then random words and ``##`` pieces over a 68-character alphabet with some
non-ASCII letters, plus ``K`` Hangul syllables with ``--wide``: trie nodes with many children
over a wide symbol range, the hard case of the double-array placement) and prints the seconds from ``WordPiece(tokens)`` to its built kernel arrays
(checks, trie, failure links, double array, normalization tables) and of ``build_trie`` alone,
with the process's peak RSS so far. A 1,000-entry build runs first, so that Numba compilation
(or the cache load) of the builder is not counted. ``--profile`` prints a cProfile summary of
``build_trie`` on the largest vocabulary.
"""
import argparse
import cProfile
import pstats
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import banner  # noqa: E402

from corpustok.kernels.wordpiece.build import build_trie  # noqa: E402
from corpustok.wordpiece.tokenizer import BERT_SPECIALS, WordPiece  # noqa: E402

ALPHABET = ("abcdefghijklmnopqrstuvwxyz0123456789"
            "éèêàçñöüßøåæœłżšžčďěřůαβγδειкнор")


def synthetic_vocab(n, seed=0, alphabet=ALPHABET):
    """``n`` distinct tokens: word lengths 2..12, letters Zipf-like (frequent letters share
    prefixes, so the trie has deep shared paths and wide nodes), a third ``##`` pieces."""
    rng = np.random.default_rng(seed)
    letters = np.array(list(alphabet))
    weights = 1.0 / np.arange(1, len(letters) + 1) ** 0.8
    weights /= weights.sum()
    out = list(BERT_SPECIALS) + list(alphabet) + ["##" + c for c in alphabet]
    seen = set(out)
    while len(out) < n:
        k = n - len(out)
        lengths = rng.integers(2, 13, size=k)
        chars = rng.choice(letters, size=int(lengths.sum()), p=weights)
        suffix = rng.random(k) < 1 / 3
        pos = 0
        for length, s in zip(lengths.tolist(), suffix.tolist()):
            word = "".join(chars[pos:pos + length])
            pos += length
            tok = "##" + word if s else word
            if tok not in seen:
                seen.add(tok)
                out.append(tok)
    return out[:n]


def build_seconds(tokens):
    t = time.perf_counter()
    WordPiece(tokens, lowercase=False)._arrays
    total = time.perf_counter() - t
    t = time.perf_counter()
    build_trie(tokens, "##")
    return total, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100000,300000,1000000")
    ap.add_argument("--wide", type=int, default=0, metavar="K")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    alphabet = ALPHABET + "".join(chr(0xAC00 + k) for k in range(args.wide))
    banner(f"WordPiece table build, {len(alphabet)}-letter alphabet", ("numpy", "numba"))
    build_seconds(synthetic_vocab(1000))
    for n in sizes:
        tokens = synthetic_vocab(n, alphabet=alphabet)
        chars = sum(len(t) for t in tokens)
        total, trie = build_seconds(tokens)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{n:>9,} entries ({chars:>10,} chars): build {total:7.2f} s, build_trie "
              f"{trie:7.2f} s, peak RSS {rss:,.0f} MiB", flush=True)
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(build_trie, tokens, "##")
        pstats.Stats(prof).sort_stats("cumulative").print_stats(15)


if __name__ == "__main__":
    main()
