"""What the rank-file tests share (tests/formats/test_tiktoken_files.py and its whole-corpus
sweeps in tests/parity/test_tiktoken_files_slow.py): the oracles' Unicode tables, read back
through the oracles, and the code points where they differ from ours."""
import unicodedata
from functools import lru_cache

import numpy as np
import tiktoken
from tokenizers import Regex, normalizers

from corpustok.pretokenize.pattern import PROPERTY_BITS, unicode_props


# ---- the oracles' Unicode tables, read back through the oracles -----------------------------
# Our split uses the ``regex`` module's tables, tiktoken Rust's regex crate, HF Oniguruma; each
# may be another Unicode version (docs/unicode_differences.md). A probe text holds every code
# point once: tiktoken with single-byte ranks returns the bytes of exactly the text its pattern
# matches (find_iter skips the rest), and HF's Replace normalizer runs the Oniguruma of its
# Split and deletes the matches.

CONTRACTION_LETTERS = "strevmld"  # the only letters under (?i) in the named patterns
CHANGED_CATEGORY = {0x0295: "Ll to Lo in Unicode 17.0"}  # the rest of a diff is unassigned


@lru_cache(maxsize=None)
def probe_text(first=0):
    return "".join(chr(c) for c in range(first, 0x110000) if not 0xD800 <= c < 0xE000)


def matched_code_points(oracle, pattern, text):
    """The code points of ``text`` (each once) that ``pattern`` matches under the oracle."""
    codes = np.frombuffer(text.encode("utf-32-le"), np.uint32)
    if oracle == "tiktoken":
        enc = tiktoken.Encoding("probe", pat_str=pattern, special_tokens={},
                                mergeable_ranks={bytes([b]): b for b in range(256)})
        return np.frombuffer(bytes(enc.encode_ordinary(text)).decode().encode("utf-32-le"),
                             np.uint32)
    kept = normalizers.Replace(Regex(pattern), "").normalize_str(text)
    matched = np.zeros(0x110000, bool)
    matched[codes] = True
    matched[np.frombuffer(kept.encode("utf-32-le"), np.uint32)] = False
    return np.flatnonzero(matched)


@lru_cache(maxsize=None)
def oracle_tables(oracle):
    """``(props, unassigned, folds)``: the oracle's property bits in our layout, its ``\\p{Cn}``
    code points and its non-ASCII ``(code point, letter)`` case folds of the contraction
    letters."""
    props = np.zeros(0x110000, np.uint8)
    for name, bit in PROPERTY_BITS.items():
        props[matched_code_points(oracle, r"\s" if name == "s" else rf"\p{{{name}}}",
                                  probe_text())] |= bit
    unassigned = matched_code_points(oracle, r"\p{Cn}", probe_text())
    folds = {(int(c), ord(a)) for a in CONTRACTION_LETTERS
             for c in matched_code_points(oracle, f"(?i:{a})", probe_text(0x80))}
    return props, unassigned, folds


@lru_cache(maxsize=None)
def newer_code_points(oracle):
    """The code points whose split properties differ between our table and the oracle's."""
    props, _, folds = oracle_tables(oracle)
    ours, fold_from, fold_to = unicode_props()
    our_folds = {(int(c), int(a)) for c, a in zip(fold_from, fold_to)
                 if chr(a) in CONTRACTION_LETTERS}
    return np.union1d(np.flatnonzero(props != ours),
                      np.array([c for c, _ in folds ^ our_folds], np.int64))


@lru_cache(maxsize=None)
def hf_nfc_differences():
    """The code points HF's NFC normalizer (an older Unicode) treats differently from
    ``unicodedata``'s: a canonical decomposition it does not recompose, or a combining class
    it does not reorder by (after U+0345, ccc 240, and before U+0316, ccc 220)."""

    def hf(texts):  # one call; U+0020 neither composes nor reorders
        return normalizers.NFC().normalize_str(" ".join(texts)).split(" ")

    probes = [(c, unicodedata.normalize("NFD", c)) for c in probe_text()
              if unicodedata.decomposition(c)[:1] not in ("", "<")]
    marks = [c for c in probe_text() if unicodedata.combining(c)]
    probes += [(m, "a\u0345" + m) for m in marks] + [(m, "a" + m + "\u0316") for m in marks]
    got = hf([t for _, t in probes])
    return np.array(sorted({ord(c) for (c, t), h in zip(probes, got)
                            if h != unicodedata.normalize("NFC", t)}), np.int64)


def code_point_ranges(points):
    """``[(first, last)]`` runs of consecutive code points."""
    cuts = np.flatnonzero(np.diff(points) != 1)
    return list(zip(points[np.r_[0, cuts + 1]].tolist(), points[np.r_[cuts, -1]].tolist()))
