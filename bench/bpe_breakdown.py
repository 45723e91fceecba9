"""Where a byte goes in byte-level BPE encoding: ns per byte and per chunk, stage by stage.

Stages are measured by running the real kernels on the same text in ways that isolate them:

- **split**: ``split_batch`` alone (the window rules of ``kernels/split/fast.py`` where the
  pattern has one, the interpreter elsewhere), and beside it the interpreter alone;
- **UTF-8 check**: Arrow's validation (``is_well_formed``), which an Arrow column of unknown
  origin takes before encoding so that the output is sized without a counting pass; text from
  Python ``str`` (every row here) is known well-formed and skips it;
- **cache hits**: a warm encode of text whose every chunk is already cached (a sample repeated,
  caches large enough to hold it), minus the split: hash, probe, compare, copy; of which the
  **hash** (the chunk's key and hash, the encoder's own functions over every chunk alone) and
  the rest, **probe and copy** (finding the entry, writing its ids: the output);
- **misses**: a cold encode with caches of one slot on the full text, minus the all-hit figure
  per chunk, per missed chunk (merging: symbol mapping, pair lookups, the merge loop); of which
  the **symbol mapping** (``chunk_symbols`` alone over every chunk) and the rest, the
  **merge** (the pre-merge, the merge loop, keeping the result); means over every chunk of
  the text, whose first sightings are longer than most;
- **all hits, whole text**: the full text encoded again with a cache large enough for all its
  chunks (2**16 slots, 66 MB): the hit path waiting on memory, as gigatoken's same-text row;
- **as run**: the default encode on the full text, a new (seeded) cache each run (12% of
  GPT-2's shared-mix chunks occur once in 7 MB, so misses are a floor no cache size removes);
- **a miss, stage by stage**: the distinct chunks alone, in text order, through the encoder's
  own miss function (``merge_chunk``: symbol mapping, pre-merge, merge loop, copy), each
  once (*first*: its pair-table lines as the previous misses left them) and each twice in a
  row (the second, *again*, finds every line it reads in L1: the work without memory waits),
  and the stages again alone; *first* minus *again* is what a miss waits on memory at the
  least (in a real run the hits between two misses evict more).

The miss rows' ns a byte are per byte of the text at its compulsory miss rate (each distinct
chunk missed once, at the mean cost). CPU time medians of ``--runs`` (default 5), one thread.
Beside them, what can be timed of gigatoken from outside (when installed): its encode of new
text, of the same text again (every chunk cached: split, hash, probe, copy) and
``pretokenized_counts`` (its split and a count per distinct chunk). The peers' whole encodes
on this text are in ``bench/bpe.py``.

Usage: ``python bench/bpe_breakdown.py [--mb 8] [--runs 5] [--tokenizer PATH] [--corpus mix]``.
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, banner  # noqa: E402
from bpe import CORPORA, CORPUS, corpus_sample, package_version  # noqa: E402

import corpustok  # noqa: E402
from corpustok.arrow import is_well_formed, utf8_batch  # noqa: E402
from corpustok.kernels.bpe.cache import (FAST_KEY, FAST_WORDS, WIDE_KEY,  # noqa: E402
                                         WIDE_WORDS, chunk_cache, general_hash, line_key)
from corpustok.kernels.bpe.chunk import (LONG, WORK, chunk_merger, chunk_symbols,  # noqa: E402
                                         merge_chunk)
from corpustok.kernels.bpe.merge import long_work  # noqa: E402
from corpustok.kernels.bpe.encode import EncodeWork  # noqa: E402
from corpustok.kernels.bpe.premerge import premerge  # noqa: E402
from corpustok.kernels.split.fast import split_batch  # noqa: E402
from corpustok.pretokenize.patterns import pattern_named, split_arrays  # noqa: E402
from corpustok.pretokenize.pattern import compile_pattern  # noqa: E402


def cpu_median(fn, runs, setup=lambda: None):
    """Median CPU time of ``fn`` over ``runs`` after one untimed call, ``setup`` (untimed)
    before each."""
    setup()
    fn()
    times = []
    for _ in range(runs):
        setup()
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


@njit(cache=True)
def hash_pass(data, starts, ends):
    """Every chunk's cache key and hash, as the encoder computes them before a lookup."""
    acc = np.int64(0)
    for c in range(len(starts)):
        s, e = starts[c], ends[c]
        if e - s <= FAST_KEY:
            k1, k2, _, _, h = line_key(data, s, e, FAST_WORDS)
            acc ^= k1 ^ k2 ^ h
        elif e - s <= WIDE_KEY:
            k1, k2, k3, k4, h = line_key(data, s, e, WIDE_WORDS)
            acc ^= k1 ^ k2 ^ k3 ^ k4 ^ h
        else:
            acc ^= general_hash(data, s, e)
    return acc


@njit(cache=True)
def symbol_pass(data, starts, ends, substrate, sym_id, work, reps=1):
    """Every chunk's base symbols as token ids, as a miss maps them before merging (``reps``
    times each, in a row)."""
    total = 0
    for c in range(len(starts)):
        for _ in range(reps):
            total += chunk_symbols(data, starts[c], ends[c], substrate, sym_id, work)
    return total


@njit(cache=True)
def premerge_pass(data, starts, ends, substrate, sym_id, pre, new_of_rank, work, reps):
    """Every chunk's symbols and pre-merge pass, ``reps`` times each in a row."""
    total = 0
    for c in range(len(starts)):
        for _ in range(reps):
            n = chunk_symbols(data, starts[c], ends[c], substrate, sym_id, work)
            total += premerge(work, n, pre, new_of_rank)
    return total


@njit(cache=True)
def miss_pass(merger, data, starts, ends, out, reps):
    """Every chunk through the encoder's miss function, ``reps`` times each in a row."""
    total = 0
    for c in range(len(starts)):
        for _ in range(reps):
            total += merge_chunk(merger, data, starts[c], ends[c], out, 0)
    return total


def first_sightings(data, starts, ends):
    """The index of each distinct chunk's first occurrence, in text order."""
    seen, first = set(), []
    for c, (a, e) in enumerate(zip(starts.tolist(), ends.tolist())):
        key = bytes(data[a:e])
        if key not in seen:
            seen.add(key)
            first.append(c)
    return np.array(first, np.int64)


def miss_stages(tok, data, starts, ends, first, runs):
    """ns a distinct chunk (text order) of a miss: first, again, and its stages again. Chunks
    of more than ``WORK`` bytes (the encoder merges them elsewhere) are left out. Each stage
    has a jitted loop of its own: one loop choosing the stage by an argument timed them wrong
    (decision 0032)."""
    first = first[ends[first] - starts[first] <= WORK]
    s, e = starts[first], ends[first]
    ids, keys = np.empty(3 * WORK, np.int32), np.empty(3 * WORK, np.int64)  # as the encoder's
    merger = chunk_merger(tok._model, EncodeWork(ids, keys, None, None, long_work(LONG), None))
    out = np.empty(3 * WORK, np.int32)
    n = len(first)

    def twice_minus_once(fn):
        return (cpu_median(lambda: fn(2), runs) - cpu_median(lambda: fn(1), runs)) / n

    once = cpu_median(lambda: miss_pass(merger, data, s, e, out, 1), runs) / n
    again = twice_minus_once(lambda r: miss_pass(merger, data, s, e, out, r))
    symbols = twice_minus_once(lambda r: symbol_pass(data, s, e, tok._code, tok._sym_id, ids,
                                                     r))
    pre = twice_minus_once(lambda r: premerge_pass(data, s, e, tok._code, tok._sym_id,
                                                   tok._pre, tok._pairs[1], ids, r))
    return n, once, again, symbols, pre - symbols


def with_cache(tok, slots):
    tok._caches.use(chunk_cache(slots))  # this thread's cache, for this measurement only
    return tok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=8)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tokenizer", default=str(REPO / "tests" / "data" / "gpt2"))
    ap.add_argument("--corpus", choices=CORPORA, default="mix",
                    help="which shared corpus files (as bench/bpe.py's --corpus)")
    args = ap.parse_args()
    CORPUS[0] = args.corpus
    banner("BPE encode breakdown (one thread, CPU time)", ("numba", "numpy"))
    tok = corpustok.load(args.tokenizer)
    lines = corpus_sample(args.mb)
    batch = utf8_batch(lines)
    nbytes = len(batch.data)
    ends, _ = split_arrays(batch.data, batch.offsets, tok.pretokenizer)
    nchunks = len(ends)
    repeated = utf8_batch(lines[:4000] * 20)  # ~20K distinct chunks, each seen 20 times
    rep_chunks = len(split_arrays(repeated.data, repeated.offsets, tok.pretokenizer)[0])

    split = cpu_median(lambda: split_arrays(batch.data, batch.offsets, tok.pretokenizer),
                       args.runs) / nbytes
    interpreted = compile_pattern(pattern_named(tok.pretokenizer)).program  # no window rule
    ends_buf = np.empty(nbytes, np.int64)
    doc_buf = np.empty(len(batch.offsets), np.int64)
    interpreter = cpu_median(lambda: split_batch(batch.data, batch.offsets, interpreted,
                                                 ends_buf, doc_buf), args.runs) / nbytes
    unchecked = utf8_batch(pa.array(lines, pa.large_string()))  # as a column read from a file
    check = cpu_median(lambda: is_well_formed(unchecked), args.runs) / nbytes
    with_cache(tok, 1 << 16)
    hit_total = cpu_median(lambda: tok.encode_arrays(repeated), args.runs) / rep_chunks
    rep_split = cpu_median(lambda: split_arrays(repeated.data, repeated.offsets,
                                                tok.pretokenizer), args.runs) / rep_chunks
    hit = hit_total - rep_split
    with_cache(tok, 1 << 16)
    whole_hits = cpu_median(lambda: tok.encode_arrays(batch), args.runs) / nchunks
    with_cache(tok, 1)
    cold = cpu_median(lambda: tok.encode_arrays(batch), args.runs) / nchunks
    as_run = cpu_median(lambda: tok.encode_arrays(batch), args.runs,
                        setup=lambda: (tok._caches.use(None), tok._cache()))
    starts = np.concatenate([batch.offsets[:1], ends[:-1]])  # documents are contiguous
    first = first_sightings(batch.data, starts, ends)
    distinct = len(first)
    hashing = cpu_median(lambda: hash_pass(batch.data, starts, ends), args.runs) / nchunks
    work = np.empty(4 * int((ends - starts).max()), np.int32)  # as the encoder's work[0]
    symbols = cpu_median(lambda: symbol_pass(batch.data, starts, ends, tok._code, tok._sym_id,
                                             work), args.runs) / nchunks
    miss = cold - hit_total

    print(f"\n{nbytes / 1e6:.1f} MB, {nchunks:,} chunks ({nbytes / nchunks:.2f} bytes each), "
          f"{distinct:,} distinct ({distinct / nchunks:.1%}: the compulsory miss rate)")
    per_chunk = nbytes / nchunks
    per_miss = distinct / nbytes  # misses a byte of text: each distinct chunk once
    rows = [("split", split * per_chunk, split),
            ("split, the interpreter alone", interpreter * per_chunk, interpreter),
            ("UTF-8 check (Arrow input only)", check * per_chunk, check),
            ("cache hit (hash, probe, copy)", hit, hit / per_chunk),
            ("  hash", hashing, hashing / per_chunk),
            ("  probe and copy (output)", hit - hashing, (hit - hashing) / per_chunk),
            ("one miss (ns/byte: one a distinct chunk)", miss, miss * per_miss),
            ("  symbol mapping", symbols, symbols * per_miss),
            ("  merge (and keeping it)", miss - symbols, (miss - symbols) * per_miss),
            ("all hits, whole text (split to copy)", whole_hits, whole_hits / per_chunk)]
    print(f"  {'stage':42s} {'ns/chunk':>9s} {'ns/byte':>8s}")
    for name, ns, ns_byte in rows:
        print(f"  {name:42s} {ns * 1e9:9.1f} {ns_byte * 1e9:8.2f}")
    print(f"  {'as run (default cache)':42s} {as_run / nchunks * 1e9:9.1f} "
          f"{as_run / nbytes * 1e9:8.2f}   = {nbytes / as_run / 1e6:.1f} MB/s")
    n, once, again, sym_again, pre_again = miss_stages(tok, batch.data, starts, ends, first,
                                                    args.runs)
    print(f"\n  a miss, stage by stage: the {n:,} distinct chunks of at most {WORK} bytes alone, "
          "text order, ns a chunk")
    for name, ns in (("first sighting (merge_chunk once)", once),
                     ("again right after (every line in L1)", again),
                     ("  symbol mapping, again", sym_again),
                     ("  pre-merge, again", pre_again),
                     ("  merge loop and copy, again", again - sym_again - pre_again),
                     ("waiting on memory (first - again)", once - again)):
        print(f"  {name:42s} {ns * 1e9:9.1f}")
    gigatoken_stages(args.tokenizer, tok, lines, nbytes, nchunks, args.runs, args.mb)


def gigatoken_stages(path, tok, lines, nbytes, nchunks, runs, mb):
    """gigatoken's figures on the same text, per chunk of our split and per byte."""
    try:
        import gigatoken
        from gigatoken.gigatoken_rs import pretokenized_counts
    except ImportError:
        print("  gigatoken not installed (pip install gigatoken==0.10.0): its rows skipped")
        return
    if tok.substrate != "utf8":
        print(f"  gigatoken has no {tok.substrate} substrate: its rows skipped")
        return
    held_out = corpus_sample(1, skip_mb=mb)  # warm-up text it has not seen

    def load():
        g = (gigatoken.Tokenizer.from_tiktoken(path) if str(path).endswith(".tiktoken") else
             gigatoken.Tokenizer.from_json(json.dumps(tok.to_hf())))
        g.encode_batch(held_out, parallel=False)
        return g

    fresh = []
    for _ in range(runs):
        g = load()
        t = time.process_time()
        g.encode_batch(lines, parallel=False)
        fresh.append(time.process_time() - t)
    fresh = statistics.median(fresh)
    again = cpu_median(lambda: g.encode_batch(lines, parallel=False), runs)
    text = "".join(lines).encode()
    split = cpu_median(lambda: pretokenized_counts(text), runs)
    print(f"  gigatoken {package_version('gigatoken')}, the same text:")
    for name, s in (("split + count (pretokenized_counts)", split),
                    ("same text again (all hits)", again), ("new text (as run)", fresh)):
        print(f"  {name:42s} {s / nchunks * 1e9:9.1f} {s / nbytes * 1e9:8.2f}   = "
              f"{nbytes / s / 1e6:.1f} MB/s")


if __name__ == "__main__":
    main()
