"""Generate ``corpustok/data/hf_unicode.npz``: the Unicode tables of HF ``tokenizers``'
``NFKD``, ``StripAccents`` and ``Lowercase`` normalizers, read from the installed
``tokenizers`` itself (decision 0039).

``tokenizers`` (Rust) does not use Python's Unicode version: NFKD and the combining-mark
test of StripAccents come from the ``unicode-normalization-alignments`` crate (an older
Unicode than Python 3.11's 14.0: U+32FF SQUARE ERA NAME REIWA is kept, Python gives
``令和``), Lowercase from Rust's ``char::to_lowercase`` (a newer one: U+1C89 CYRILLIC CAPITAL
LETTER TJE lowercases to U+1C8A, Python keeps it). So every table here is what ``tokenizers``
does, asked one code point at a time (surrogates skipped: a Python ``str`` holding one cannot
reach Rust):

- ``nfkd_keys`` / ``nfkd_off`` / ``nfkd_cps``: each code point that ``NFKD`` changes, and its
  full decomposition (code points ``nfkd_cps[nfkd_off[k]:nfkd_off[k + 1]]``);
- ``lower_keys`` / ``lower_off`` / ``lower_cps``: the same for ``Lowercase`` (Rust's
  to_lowercase is per character: İ -> i U+0307, Σ -> σ whatever follows);
- ``mark_keys``: the code points ``StripAccents`` removes;
- ``ccc_keys`` / ``ccc_rank``: the non-starters of NFKD's canonical ordering and the rank of
  their canonical combining class (1 the lowest class; the order, not Unicode's number, is
  what sorting needs). NFKD sorts each run of non-starters stably by class; the ranks are read
  from ``tokenizers`` too: a character is a non-starter when it moves past U+0334 (class 1,
  the lowest) or U+0345 (class 240, the highest), and the non-starters are sorted by which of
  two moves in front of the other (:func:`ccc_ranks`).

Rerun after upgrading ``tokenizers`` (``tests/sentencepiece/test_sentencepiece_hf_unicode.py``
fails until then):

    .venv/bin/python tools/gen_hf_unicode_tables.py
"""
import functools
from pathlib import Path

import numpy as np
import tokenizers
from tokenizers import normalizers

OUT = Path(__file__).resolve().parents[1] / "corpustok" / "data" / "hf_unicode.npz"
LOWEST, HIGHEST = "\u0334", "\u0345"  # canonical combining classes 1 and 240


def code_points():
    return (c for c in range(0x110000) if not 0xD800 <= c < 0xE000)


def changed(normalizer):
    """``{code point: its output (str)}`` for every code point the normalizer changes."""
    norm = normalizer.normalize_str
    out = {}
    for c in code_points():
        s = chr(c)
        t = norm(s)
        if t != s:
            out[c] = t
    return out


def ccc_ranks(nfkd_map):
    """``{code point: rank}`` of NFKD's non-starters, from ``tokenizers``' reordering."""
    nfkd = normalizers.NFKD().normalize_str
    assert nfkd(HIGHEST + LOWEST) == LOWEST + HIGHEST
    marks = []
    for c in code_points():
        if c in nfkd_map:  # not a fixed point: its class never reaches the sort
            continue
        s = chr(c)
        if nfkd(s + LOWEST) != s + LOWEST or nfkd(HIGHEST + s) != HIGHEST + s:
            marks.append(s)

    def order(x, y):
        if nfkd(x + y) == y + x:
            return 1
        if nfkd(y + x) == x + y:
            return -1
        return 0

    marks.sort(key=functools.cmp_to_key(order))
    ranks, rank = {}, 0
    for k, m in enumerate(marks):
        if k == 0 or order(marks[k - 1], m) != 0:
            rank += 1
        ranks[ord(m)] = rank
    assert rank < 256, rank
    for out in nfkd_map.values():  # decompositions are made of fixed points
        assert all(ord(c) not in nfkd_map for c in out), out
    return ranks


def _packed(mapping):
    keys = np.array(sorted(mapping), np.int32)
    lengths = [len(mapping[k]) for k in keys.tolist()]
    off = np.zeros(len(keys) + 1, np.int32)
    np.cumsum(lengths, out=off[1:])
    cps = np.array([ord(c) for k in keys.tolist() for c in mapping[k]], np.int32)
    return keys, off, cps


def tables():
    """The arrays of ``hf_unicode.npz`` (a dict), from the installed ``tokenizers``."""
    nfkd_map = changed(normalizers.NFKD())
    lower_map = changed(normalizers.Lowercase())
    strip_map = changed(normalizers.StripAccents())
    assert all(v == "" for v in strip_map.values())
    ranks = ccc_ranks(nfkd_map)
    nfkd_keys, nfkd_off, nfkd_cps = _packed(nfkd_map)
    lower_keys, lower_off, lower_cps = _packed(lower_map)
    ccc_keys = np.array(sorted(ranks), np.int32)
    return dict(nfkd_keys=nfkd_keys, nfkd_off=nfkd_off, nfkd_cps=nfkd_cps,
                lower_keys=lower_keys, lower_off=lower_off, lower_cps=lower_cps,
                mark_keys=np.array(sorted(strip_map), np.int32), ccc_keys=ccc_keys,
                ccc_rank=np.array([ranks[k] for k in ccc_keys.tolist()], np.uint8))


def main():
    t = tables()
    np.savez_compressed(OUT, tokenizers_version=np.array(tokenizers.__version__), **t)
    print(f"{OUT}: NFKD {len(t['nfkd_keys'])}, Lowercase {len(t['lower_keys'])}, "
          f"StripAccents {len(t['mark_keys'])}, non-starters {len(t['ccc_keys'])} in "
          f"{int(t['ccc_rank'].max())} classes (tokenizers {tokenizers.__version__})")


if __name__ == "__main__":
    main()
