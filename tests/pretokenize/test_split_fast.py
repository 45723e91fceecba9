"""The bit-parallel split rules against the interpreter (itself held to the ``regex`` module
in test_pretokenize.py): same chunks for whole texts, batches, invalid UTF-8 and every cut of
a streamed text."""
import numpy as np
import pytest
import regex
from hypothesis import example, given, settings
from hypothesis import strategies as st

from numba import njit

from corpustok.kernels.split.byte_masks import range_mask
from corpustok.kernels.split.fast import (PROPS_L, PROPS_LOWER, PROPS_N, PROPS_S, split_batch,
                                          split_some)
from corpustok.pretokenize.patterns import PATTERNS, RULES, program
from corpustok.pretokenize.pattern import compile_pattern, unicode_props

NAMES = sorted(RULES)
# Every kind of character a rule tells apart, ASCII and not: letters that make contractions,
# spaces and other whitespace (ASCII, NBSP, ideographic space, line separator), digits of
# several scripts, apostrophes, punctuation, marks, letters of 2, 3 and 4 bytes.
ALPHABET = list("'sStTrReEvVlLdDmMxX  \t\n\r\x0b\x0c0123.,!-_/\"") + [
    "\u00a0", "\u3000", "\u2028", "\u0085", "\u0663", "\u00bd", "\u2160", "é", "ß", "Ω", "ж",
    "中", "ǅ", "ʰ", "\u0301", "\u00ab", "\u2014", "\U0001f600", "\U0001d11e", "\U00020000"]
texts = st.lists(st.sampled_from(ALPHABET), max_size=160).map("".join)


@njit
def masks_of(data, lo, hi):
    """``range_mask`` at every position where 64 bytes can be read (an intrinsic is called
    from jitted code only)."""
    out = np.empty(max(len(data) - 63, 0), np.int64)
    for p in range(len(out)):
        out[p] = range_mask(data, p, lo, hi)
    return out


def interpreted(name):
    return compile_pattern(PATTERNS[name], 0).program


def batch(raws):
    offsets = np.zeros(len(raws) + 1, np.int64)
    np.cumsum([len(r) for r in raws], out=offsets[1:])
    return np.frombuffer(b"".join(raws) or b"\0", np.uint8), offsets


def split_with(prog, data, offsets):
    ends = np.empty(max(len(data), 1), np.int64)
    chunk_offsets = np.empty(len(offsets), np.int64)
    n = split_batch(data, offsets, prog, ends, chunk_offsets)
    return ends[:n].tolist(), chunk_offsets.tolist()


@pytest.mark.parametrize("name", NAMES)
@given(docs=st.lists(texts, min_size=1, max_size=6))
@settings(max_examples=400, deadline=None)
@example(docs=["it's they're 'll ''s 's x'S 'Re", "a  b\n\n c\r\n d \t e\u00a0 f\u3000g   "])
@example(docs=["x" * 61 + "'ll", "y" * 62 + "  z", " " * 63 + "'s"])
def test_rule_equals_interpreter(name, docs):
    data, offsets = batch([d.encode() for d in docs])
    assert split_with(program(name), data, offsets) == \
        split_with(interpreted(name), data, offsets)


@pytest.mark.parametrize("name", NAMES)
@given(docs=st.lists(st.binary(max_size=120), min_size=1, max_size=4))
@settings(max_examples=200, deadline=None)
@example(docs=[b"ab\xff cd\xe2\x82 x\xf0\x9f\x98\xed\xa0\x80's" * 5])
def test_rule_on_invalid_utf8(name, docs):
    data, offsets = batch(docs)
    assert split_with(program(name), data, offsets) == \
        split_with(interpreted(name), data, offsets)


@pytest.mark.parametrize("name", NAMES)
@given(text=texts, pad=st.integers(0, 70))
@settings(max_examples=150, deadline=None)
def test_rule_streaming_holds_what_may_change(name, text, pad):
    assert_streams_as_interpreter(name, text, pad)


def assert_streams_as_interpreter(name, text, pad):
    """Streaming (not final): for every cut of the text, the same chunks come out before the
    split stops, and it stops at the same chunk, as with the interpreter alone."""
    raw = text.encode()
    data = np.frombuffer(raw + b"\0" * pad or b"\0", np.uint8)
    for cut in range(1, len(raw) + 1):
        got = []
        for prog in (program(name), interpreted(name)):
            ends = np.empty(len(raw) + 1, np.int64)
            k, p, held = split_some(data, 0, cut, prog, False, ends, 0, len(ends))
            got.append((ends[:k].tolist(), p, held))
        assert got[0] == got[1], (raw, cut)


# Letter runs of the cased rules (o200k, tekken): capitals (Lu, Lt), small letters (Ll),
# caseless letters (Lo, Lm: either case to ``U*D+|U+D*``) of 1 to 4 bytes, marks, and what
# ends a run.
CASED = [n for n in NAMES if n in ("o200k", "tekken")]
RUN_LETTERS = list("AaBb") + ["Ω", "ж", "ǅ", "中", "ʰ", "ー", "𠀀", "́", "ا"]
runs = st.lists(st.sampled_from(RUN_LETTERS + list(" '.1/\n") + ["'s"]), max_size=120).map(
    "".join)


@pytest.mark.parametrize("name", CASED)
@given(docs=st.lists(runs, min_size=1, max_size=4))
@settings(max_examples=1500, deadline=None)
@example(docs=["中A", "中AB ", "中ABc", "a中B", "A中B中", "aB中C", "AbC中D", "中A's", "ʰAB!",
               "中" * 30 + "A" * 10, "x" * 60 + "中ABCDEFGH", "x" * 60 + "中ABCDEFGh",
               "A" * 29 + "ΩΩΩΩΩ's中" + "A" * 12 + "ΩΩΩж", "x's中A b", "x'S中Aa",
               "a\u0301B", "A\u0301B ", "!!\u0301a", " !\u0301a", "!\u0301!", "x's\u0301A",
               "1\u0301A", "\u0301\u0301Ab", "हिन्दी भाषा", "ภาษาไทย", "Ä\u0308\u0301BC d"])
def test_cased_rule_on_caseless_letters(name, docs):
    """Caseless letters inside cased letter runs: the rule's chunks are the interpreter's and
    the ``regex`` module's."""
    data, offsets = batch([d.encode() for d in docs])
    got = split_with(program(name), data, offsets)
    assert got == split_with(interpreted(name), data, offsets)
    assert np.diff(got[1]).tolist() == [len(regex.findall(PATTERNS[name], d)) for d in docs]


@pytest.mark.parametrize("name", CASED)
@given(text=runs, pad=st.integers(0, 70))
@settings(max_examples=150, deadline=None)
def test_cased_rule_streaming_on_caseless_letters(name, text, pad):
    assert_streams_as_interpreter(name, text, pad)


# Letter runs longer than a window (words of scripts without spaces, long identifiers), of
# letters of every kind and a Thai vowel sign (a mark inside a word): a window that one run
# fills hands it to the interpreter (decision 0006 tried going on inside it instead).
WORD_LETTERS = list("AaBb") + ["Ω", "ж", "ǅ", "中", "ʰ", "ー", "\U00020000", "é", "ß", "ก",
                                "\u0e34"]
long_runs = st.lists(st.tuples(st.lists(st.sampled_from(WORD_LETTERS), min_size=1,
                                        max_size=90).map("".join),
                               st.sampled_from([" ", ".", "'s", "\n", "1", "\u0301", "!!", ""])),
                     max_size=5).map(lambda ws: "".join(w + s for w, s in ws))


@pytest.mark.parametrize("name", NAMES)
@given(docs=st.lists(long_runs, min_size=1, max_size=3))
@settings(max_examples=600, deadline=None)
@example(docs=["a" * 100 + "中" * 30 + "A" + "b", "a" * 70 + "中" * 30 + "AB c", "中" * 40 + "A",
               "A" * 90 + "b", "ก" * 30 + "\u0e34" * 3 + "A" * 40])
def test_rule_on_letter_runs_longer_than_a_window(name, docs):
    data, offsets = batch([d.encode() for d in docs])
    got = split_with(program(name), data, offsets)
    assert got == split_with(interpreted(name), data, offsets)
    assert np.diff(got[1]).tolist() == [len(regex.findall(PATTERNS[name], d)) for d in docs]


@pytest.mark.parametrize("name", CASED + ["cl100k"])
@given(text=long_runs, pad=st.integers(0, 70))
@settings(max_examples=60, deadline=None)
def test_rule_streaming_on_letter_runs_longer_than_a_window(name, text, pad):
    assert_streams_as_interpreter(name, text, pad)


@pytest.mark.parametrize("name", NAMES)
def test_rule_on_long_runs_and_window_edges(name):
    texts = ["a" * 200, " " * 130 + "b", "1" * 100, "!" * 70 + "'s", "\n" * 65 + "x",
             ("word " * 40).strip(), "中" * 50 + " x", "é" * 40 + "'ll"]
    for shift in range(3):
        docs = [("." * shift + t).encode() for t in texts]
        data, offsets = batch(docs)
        assert split_with(program(name), data, offsets) == \
            split_with(interpreted(name), data, offsets)
        chunks = [regex.findall(PATTERNS[name], d.decode()) for d in docs]
        ends, starts = split_with(program(name), data, offsets)
        assert [len(c) for c in chunks] == np.diff(starts).tolist()


def test_ascii_classes_are_the_properties():
    """The rules classify ASCII by byte ranges; those are the Unicode properties."""
    props = unicode_props()[0][:128]
    data = np.arange(128, dtype=np.uint8)
    data = np.concatenate([data, np.zeros(64, np.uint8)])

    def bits(lo, hi):
        got = masks_of(data, lo, hi)
        return int(got[0]) % (1 << 64) | int(got[64]) % (1 << 64) << 64

    def want(flag):
        return sum(1 << b for b in range(128) if props[b] & flag)

    assert bits(65, 90) | bits(97, 122) == want(PROPS_L)
    assert bits(97, 122) == want(PROPS_LOWER)
    assert bits(48, 57) == want(PROPS_N)
    assert bits(9, 13) | bits(32, 32) == want(PROPS_S)


@given(raw=st.binary(min_size=64, max_size=100), lo=st.integers(0, 255),
       span=st.integers(0, 255))
@settings(max_examples=300, deadline=None)
def test_range_mask(raw, lo, span):
    hi = min(255, lo + span)
    got = masks_of(np.frombuffer(raw, np.uint8), lo, hi)
    for p in range(len(raw) - 63):
        want = sum(1 << q for q in range(64) if lo <= raw[p + q] <= hi)
        assert int(got[p]) % (1 << 64) == want
