"""Generate ``corpustok/data/bert_unicode.npz``: HF BERT normalization and pre-tokenization
behaviour for every Unicode scalar value.

HF ``tokenizers`` classifies characters with dated tables (the ``unicode_categories`` crate of
2016, its own NFD crate, Rust's lowercase mapping and a typo in the CJK range). Rather than
re-deriving those rules from ``unicodedata`` (a different Unicode version), this script asks the
installed ``tokenizers`` about each code point one at a time, so the committed table reproduces
HF exactly and the package never imports ``tokenizers`` at run time.

Stored arrays (ranges are ``int32 [k, 2]`` half-open ``[start, end)``):

* ``removed``: code points ``clean_text`` deletes (NUL, U+FFFD, Cc/Cf/Co except tab/LF/CR).
* ``spaces``: code points ``clean_text`` turns into U+0020.
* ``chinese``: code points ``handle_chinese_chars`` surrounds with spaces.
* ``pretok_ws`` / ``pretok_punct``: code points ``BertPreTokenizer`` splits on (dropped) or
  isolates as one-character words.
* ``map_<name>_cp/off/pool``: for the per-character normalizers ``strip_lower``
  (NFD, drop Mn, lowercase), ``strip`` (NFD, drop Mn) and ``lower`` (lowercase), the code points
  whose normalized form differs from themselves, with their forms as runs of ``pool``.

Run: ``.venv/bin/python tools/gen_bert_tables.py`` (about a minute).
"""
import sys
from pathlib import Path

import numpy as np
import tokenizers
from tokenizers import normalizers, pre_tokenizers

OUT = Path(__file__).resolve().parents[1] / "corpustok" / "data" / "bert_unicode.npz"
SCALARS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
MAPS = {"strip_lower": (True, True), "strip": (True, False), "lower": (False, True)}


def ranges(mask):
    """Half-open [start, end) runs of True in a bool array over all code points."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return edges.reshape(-1, 2).astype(np.int32)


def bert(clean=False, chinese=False, strip=False, lower=False):
    return normalizers.BertNormalizer(clean_text=clean, handle_chinese_chars=chinese,
                                      strip_accents=strip, lowercase=lower)


def main():
    removed = np.zeros(0x110000, bool)
    spaces = np.zeros(0x110000, bool)
    chinese = np.zeros(0x110000, bool)
    ws = np.zeros(0x110000, bool)
    punct = np.zeros(0x110000, bool)
    clean, cjk = bert(clean=True), bert(chinese=True)
    pre = pre_tokenizers.BertPreTokenizer()
    for c in SCALARS:
        ch = chr(c)
        got = clean.normalize_str(ch)
        if got == "":
            removed[c] = True
        elif got == " " and ch != " ":
            spaces[c] = True
        elif got != ch:
            sys.exit(f"unexpected clean_text result for U+{c:04X}: {got!r}")
        got = cjk.normalize_str(ch)
        if got == f" {ch} ":
            chinese[c] = True
        elif got != ch:
            sys.exit(f"unexpected handle_chinese_chars result for U+{c:04X}: {got!r}")
        words = [w for w, _ in pre.pre_tokenize_str("a" + ch + "b")]
        if words == ["a", "b"]:
            ws[c] = True
        elif words == ["a", ch, "b"]:
            punct[c] = True
        elif words != ["a" + ch + "b"]:
            sys.exit(f"unexpected BertPreTokenizer result for U+{c:04X}: {words!r}")
    arrays = {"removed": ranges(removed), "spaces": ranges(spaces), "chinese": ranges(chinese),
              "pretok_ws": ranges(ws), "pretok_punct": ranges(punct),
              "tokenizers_version": np.array(tokenizers.__version__)}
    for name, (strip, lower) in MAPS.items():
        norm = bert(strip=strip, lower=lower)
        cps, off, pool = [], [0], []
        for c in SCALARS:
            got = norm.normalize_str(chr(c))
            if got != chr(c):
                cps.append(c)
                pool.extend(ord(x) for x in got)
                off.append(len(pool))
        arrays[f"map_{name}_cp"] = np.array(cps, np.int32)
        arrays[f"map_{name}_off"] = np.array(off, np.int32)
        arrays[f"map_{name}_pool"] = np.array(pool, np.int32)
        print(f"{name}: {len(cps)} code points change, {len(pool)} output code points")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes) from tokenizers {tokenizers.__version__}")


if __name__ == "__main__":
    main()
