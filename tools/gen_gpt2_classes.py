"""Generate ``corpustok/data/gpt2_classes.npz``: the code point classes of the GPT-2 split.

The GPT-2 pattern is defined by the ``regex`` module's ``\\p{L}``, ``\\p{N}`` and ``\\s``, so
the table is read from ``regex`` itself (not from ``unicodedata``, whose Unicode version can
differ). Stored run-length encoded (a few thousand runs instead of 1.1 M bytes);
``corpustok.pretokenize.gpt2_classes()`` expands it. Rerun after upgrading ``regex``:

    .venv/bin/python tools/gen_gpt2_classes.py
"""
from pathlib import Path

import numpy as np
import regex

LETTER, NUMBER, SPACE = 1, 2, 4  # must match kernels/split.py
OUT = Path(__file__).resolve().parents[1] / "corpustok" / "data" / "gpt2_classes.npz"


def class_table():
    """Flat uint8 class of every code point 0..0x10FFFF, straight from ``regex``."""
    everything = "".join(map(chr, range(0x110000)))
    table = np.zeros(0x110000, np.uint8)
    for bit, pattern in ((LETTER, r"\p{L}+"), (NUMBER, r"\p{N}+"), (SPACE, r"\s+")):
        for m in regex.finditer(pattern, everything):
            table[m.start():m.end()] |= bit
    overlap = np.flatnonzero(np.isin(table, [3, 5, 6, 7]))
    if len(overlap):  # the split kernel assumes the three classes are disjoint
        raise SystemExit(f"U+{overlap[0]:04X} is in more than one class")
    return table


def main():
    table = class_table()
    starts = np.flatnonzero(np.diff(table, prepend=np.uint8(255)) != 0).astype(np.int32)
    np.savez_compressed(OUT, starts=starts, values=table[starts],
                        regex_version=np.array(regex.__version__))
    print(f"{OUT}: {len(starts)} runs from regex {regex.__version__}")


if __name__ == "__main__":
    main()
