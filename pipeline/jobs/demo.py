"""The substrate codec on the embedded UDHR sample (the last part of the main job).

It encodes every document to base symbols under each substrate, decodes them back, checks the
round trip and prints what it did: the encoding floor (symbols before any merge) per substrate
and per language, where UBE's advantage on 3-byte scripts shows before any training.
"""
import json
import time
from importlib import resources

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpustok import substrate as ube

SAMPLE = "udhr_sample.jsonl"
SHOWCASE = ("eng", "rus", "arb", "hin", "tha", "bod", "amh", "zgh", "cmn_hans", "jpn", "kor")


def sample_path():
    """Path of the embedded corpus (JSONL: ``id``, ``unit``, ``lang``, ``bcp47``, ``text``)."""
    return str(resources.files("corpustok").joinpath("data", SAMPLE))


def load_sample():
    """The embedded corpus as a list of dicts."""
    with open(sample_path(), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def run(out=print):
    """Run the demo; returns 0 when every document round-trips under every substrate."""
    rows = load_sample()
    texts = pa.array([r["text"] for r in rows], pa.large_string())
    langs = np.array([r["lang"] for r in rows])
    nbytes = int(pc.sum(pc.binary_length(texts)).as_py())
    chars = np.array([len(r["text"]) for r in rows])
    out(f"substrate codec on the embedded UDHR sample "
        f"({len(rows)} documents, {len(set(langs))} languages, {nbytes / 1e6:.2f} MB)")
    out(f"{'substrate':<10}{'symbols':>10}{'per char':>10}{'encode MB/s':>13}"
        f"{'decode MB/s':>13}  round trip")
    counts = {}
    ok = True
    for name in ube.SUBSTRATES:
        ube.from_symbols_batch(ube.symbols_batch(texts[:2], name), name)  # compile / load cache
        t0 = time.perf_counter()
        lists = ube.symbols_batch(texts, name)
        t1 = time.perf_counter()
        back = ube.from_symbols_batch(lists, name)
        t2 = time.perf_counter()
        same = back.equals(texts)
        ok &= same
        counts[name] = np.diff(lists.offsets.to_numpy())
        total = int(counts[name].sum())
        out(f"{name:<10}{total:>10,}{total / chars.sum():>10.3f}"
            f"{nbytes / 1e6 / max(t1 - t0, 1e-9):>13.1f}{nbytes / 1e6 / max(t2 - t1, 1e-9):>13.1f}"
            f"  {'ok' if same else 'MISMATCH'}")
    out("\nEncoding floor per language (symbols before merges; UBE vs utf8 and utf16):")
    out(f"{'lang':<10}{'utf8':>8}{'utf16':>8}{'ube':>8}{'ube/utf8':>10}")
    for lang in SHOWCASE:
        sel = langs == lang
        if sel.any():
            u8, u16, u = (int(counts[n][sel].sum()) for n in ("utf8", "utf16", "ube"))
            out(f"{lang:<10}{u8:>8}{u16:>8}{u:>8}{u / u8:>10.3f}")
    out("\nround trip: " + ("every document decodes to itself under every substrate" if ok
                           else "FAILED"))
    return 0 if ok else 1
