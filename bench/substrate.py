"""Throughput of the substrate codec on the shared corpus against Python's own codecs.

    .venv/bin/python bench/substrate.py [--max-mb N] [--runs N] [--batch-mb N]

For each substrate it times corpustok's batch encode (text -> symbol ids, one kernel call per
batch, Arrow in and out) and batch decode (symbol ids -> text) against the closest pure-Python
equivalent built on ``str.encode``/``bytes.decode``: ``utf8`` vs ``s.encode("utf-8")``,
``utf16`` vs ``s.encode("utf-16-le")``, ``ube`` vs splitting each text into runs of 1-2 byte and
3-4 byte characters and encoding each run with its codec. MB/s counts UTF-8 input bytes.
"""
import argparse
import re

import numpy as np
import pyarrow as pa

from _common import banner, corpus_lines, timed
from corpustok import substrate as ube
from corpustok.arrow import utf8_batch
from corpustok.kernels.substrate import encode_symbols

RUNS_RE = re.compile("[\u0000-\u07ff]+|[^\u0000-\u07ff]+")


def python_ube(text):
    """(is_utf16, bytes) per run of 1-2 byte or 3-4 byte characters."""
    return [(False, run.encode("utf-8")) if run[0] < "\u0800" else
            (True, run.encode("utf-16-le")) for run in RUNS_RE.findall(text)]


PYTHON_ENCODE = {
    "utf8": lambda texts: [t.encode("utf-8") for t in texts],
    "utf16": lambda texts: [t.encode("utf-16-le") for t in texts],
    "ube": lambda texts: [python_ube(t) for t in texts],
}
PYTHON_DECODE = {
    "utf8": lambda blobs: [b.decode("utf-8") for b in blobs],
    "utf16": lambda blobs: [b.decode("utf-16-le") for b in blobs],
    "ube": lambda blobs: ["".join(r.decode("utf-16-le") if wide else r.decode("utf-8")
                                  for wide, r in runs) for runs in blobs],
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-mb", type=float, default=None, help="use at most this much text")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per measurement (median)")
    ap.add_argument("--batch-mb", type=float, default=16, help="documents per kernel call, MB")
    args = ap.parse_args()
    banner("substrate codec: corpustok vs Python str.encode", ("numpy", "numba", "pyarrow"))
    lines = corpus_lines(args.max_mb)
    texts = pa.array(lines, pa.large_string())
    nbytes = sum(len(l.encode("utf-8")) for l in lines)
    # Batches of about --batch-mb each, as the pipeline hands them to the kernels.
    sizes = np.cumsum([len(l.encode("utf-8")) for l in lines])
    cuts = np.searchsorted(sizes, np.arange(args.batch_mb * 1e6, nbytes, args.batch_mb * 1e6))
    bounds = [0, *cuts.tolist(), len(lines)]
    batches = [texts.slice(a, b - a) for a, b in zip(bounds, bounds[1:]) if b > a]
    print(f"input: shared corpus, {len(lines):,} lines (documents), {nbytes / 1e6:.1f} MB, "
          f"{len(batches)} batches; median of {args.runs} runs\n")
    print(f"{'substrate':<10}{'step':<8}{'corpustok MB/s':>15}{'kernel MB/s':>13}"
          f"{'Python MB/s':>13}{'ratio':>8}")
    for name in ube.SUBSTRATES:
        code = ube.substrate_code(name)
        encoded = [ube.symbols_batch(b, name) for b in batches]
        views = [utf8_batch(b) for b in batches]
        t_api = timed(lambda: [ube.symbols_batch(b, name) for b in batches], args.runs)[1]
        t_kernel = timed(lambda: [encode_symbols(v.data, v.offsets, code) for v in views],
                         args.runs)[1]
        t_py = timed(lambda: PYTHON_ENCODE[name](lines), max(1, args.runs // 2))[1]
        print(f"{name:<10}{'encode':<8}{nbytes / 1e6 / t_api:>15.1f}"
              f"{nbytes / 1e6 / t_kernel:>13.1f}{nbytes / 1e6 / t_py:>13.1f}"
              f"{t_py / t_api:>7.1f}x")
        blobs = PYTHON_ENCODE[name](lines)
        t_dec = timed(lambda: [ube.from_symbols_batch(e, name) for e in encoded], args.runs)[1]
        t_pyd = timed(lambda: PYTHON_DECODE[name](blobs), max(1, args.runs // 2))[1]
        print(f"{name:<10}{'decode':<8}{nbytes / 1e6 / t_dec:>15.1f}{'':>13}"
              f"{nbytes / 1e6 / t_pyd:>13.1f}{t_pyd / t_dec:>7.1f}x")


if __name__ == "__main__":
    main()
