"""Generate ``corpustok/data/unicode_props.npz``: the Unicode properties split patterns use.

Pre-tokenizer patterns are defined by the ``regex`` module's ``\\p{Lu}``, ``\\p{Ll}``,
``\\p{Lt}``, ``\\p{Lm}``, ``\\p{Lo}``, ``\\p{M}``, ``\\p{N}`` and ``\\s``, so the table is read from
``regex`` itself (not from ``unicodedata``, whose Unicode version follows the Python build): one
bit per property, run-length encoded. ``fold_from``/``fold_to`` list the non-ASCII code points
that ``regex`` matches case-insensitively to an ASCII letter (for ``(?i:'s|'t|...)``).
``corpustok.pretokenize.pattern.unicode_props()`` expands it. Rerun after upgrading ``regex``:

    .venv/bin/python tools/gen_unicode_props.py
"""
import string
import sys
from pathlib import Path

import numpy as np
import regex

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from corpustok.pretokenize.pattern import PROPERTY_BITS  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "corpustok" / "data" / "unicode_props.npz"


def property_table():
    """Flat uint8 property bits of every code point 0..0x10FFFF, straight from ``regex``."""
    everything = "".join(map(chr, range(0x110000)))
    table = np.zeros(0x110000, np.uint8)
    for name, bit in PROPERTY_BITS.items():
        pattern = r"\s+" if name == "s" else rf"\p{{{name}}}+"
        for m in regex.finditer(pattern, everything):
            table[m.start():m.end()] |= bit
    return table


def ascii_folds():
    """``(non-ASCII code point, ASCII lowercase letter)`` pairs ``regex`` matches under (?i)."""
    pairs = []
    for c in string.ascii_lowercase:
        rx = regex.compile(f"(?i:{c})")
        for cp in range(0x80, 0x110000):
            ch = chr(cp)
            if c in (ch.lower() + ch.upper() + ch.casefold()).lower() and rx.fullmatch(ch):
                pairs.append((cp, ord(c)))
    return np.array(pairs, np.int32).reshape(-1, 2)


def main():
    table = property_table()
    starts = np.flatnonzero(np.diff(table, prepend=np.uint8(255)) != 0).astype(np.int32)
    folds = ascii_folds()
    np.savez_compressed(OUT, starts=starts, values=table[starts], fold_from=folds[:, 0],
                        fold_to=folds[:, 1], regex_version=np.array(regex.__version__))
    print(f"{OUT}: {len(starts)} runs, {len(folds)} case folds, from regex {regex.__version__}")


if __name__ == "__main__":
    main()
