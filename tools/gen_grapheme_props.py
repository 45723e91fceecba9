"""Generate ``corpustok/data/grapheme_props.npz``: the properties extended grapheme clusters
are cut by (UAX #29), one uint8 a code point, run-length encoded.

HF ``tokenizers``' ``Precompiled`` normalizer replaces whole grapheme clusters of fewer than 6
bytes (decision 0037), so the kernel cuts clusters itself
(:mod:`corpustok.kernels.sentencepiece.hf_normalize`). The properties are read from the
``regex`` module (the readable reference cuts with its ``\\X``): bits 0-3 the
Grapheme_Cluster_Break value (:data:`GCB`), bit 4 Extended_Pictographic, bits 5-6
Indic_Conjunct_Break (1 Consonant, 2 Extend, 3 Linker). Rerun after upgrading ``regex``:

    .venv/bin/python tools/gen_grapheme_props.py
"""
from pathlib import Path

import numpy as np
import regex

OUT = Path(__file__).resolve().parents[1] / "corpustok" / "data" / "grapheme_props.npz"
GCB = ["Other", "CR", "LF", "Control", "Extend", "ZWJ", "Regional_Indicator", "Prepend",
       "SpacingMark", "L", "V", "T", "LV", "LVT"]
INCB = {"Consonant": 1, "Extend": 2, "Linker": 3}


def table():
    everything = "".join(map(chr, range(0x110000)))
    out = np.zeros(0x110000, np.uint8)

    def mark(pattern, value):
        for m in regex.finditer(pattern + "+", everything):
            out[m.start():m.end()] |= value

    for k, name in enumerate(GCB[1:], 1):
        mark(rf"\p{{Grapheme_Cluster_Break={name}}}", k)
    mark(r"\p{Extended_Pictographic}", 16)
    for name, k in INCB.items():
        mark(rf"\p{{InCB={name}}}", k << 5)
    return out


def main():
    t = table()
    starts = np.flatnonzero(np.r_[True, t[1:] != t[:-1]]).astype(np.int32)
    np.savez_compressed(OUT, starts=starts, values=t[starts],
                        regex_version=np.array(regex.__version__))
    print(f"{OUT}: {len(starts)} runs (regex {regex.__version__})")


if __name__ == "__main__":
    main()
