"""HF ``tokenizers``' ``NFKD``, ``StripAccents`` and ``Lowercase`` normalizers (the steps of
the json ``transformers`` writes for ALBERT), run by corpustok's kernels
(``kernels/sentencepiece/hf_unicode.py``) over ``corpustok/data/hf_unicode.npz``, equal HF
itself (decision 0039; the oracle is ``tokenizers.normalizers.<Step>().normalize_str``):

- the packed tables are what ``tools/gen_hf_unicode_tables.py`` reads from the installed
  ``tokenizers`` (a ``tokenizers`` upgrade that changes them fails here: rerun the tool);
- every code point 0..0x10FFFF but the surrogates, alone, through each step;
- every ordered pair of non-starters (NFKD's canonical ordering), and long runs of marks and
  decomposing characters (the kernel's merge sort past 32 marks);
- hypothesis texts through each step and through each ALBERT normalizer, kernel and
  reference.
"""
import importlib.util
import json
from functools import lru_cache

import numpy as np
import pytest
import unicodedata
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, normalizers

from corpustok.arrow import read_only
from corpustok.kernels.sentencepiece.hf_normalize import hf_normalize_batch
from corpustok.sentencepiece.hf_unicode import hf_unicode_arrays, hf_unicode_maps
from corpustok.sentencepiece.hf_unigram import norm_state
from corpustok.sentencepiece.hf_unigram_reference import Reference
from tests.conftest import REPO
from tests.sentencepiece.test_sentencepiece_hf_unigram import ALBERT_CHARS, ALBERT_FILES, \
    doc_of, pair

STEPS = ["NFKD", "StripAccents", "Lowercase"]
EVERY = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]


def run_step(kind, texts):
    """corpustok's kernel of one normalizer step on each text."""
    return run_state(norm_state([{"type": kind}], kind), texts)


def run_state(state, texts):
    raw = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(raw) + 1, np.int64)
    np.cumsum([len(r) for r in raw], out=offsets[1:])
    data = np.frombuffer(b"".join(raw), np.uint8)
    out, out_off = hf_normalize_batch(read_only(data), read_only(offsets), state,
                                      np.empty(0, np.uint8))  # no room: a new array
    blob = out.tobytes()
    return [blob[a:b].decode("utf-8") for a, b in zip(out_off[:-1], out_off[1:])]


def hf_step(kind):
    return getattr(normalizers, kind)().normalize_str


def test_tables_are_what_tokenizers_gives():
    """hf_unicode.npz equals the generator's output from the installed tokenizers."""
    spec = importlib.util.spec_from_file_location("gen_hf_unicode_tables",
                                                  REPO / "tools" / "gen_hf_unicode_tables.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    want = gen.tables()
    packed = hf_unicode_arrays()
    assert sorted(packed) == sorted(want) + ["tokenizers_version"]
    for key, arr in want.items():
        assert packed[key].dtype == arr.dtype and np.array_equal(packed[key], arr), key


@pytest.mark.parametrize("kind", STEPS)
def test_every_code_point_equals_hf(kind):
    """Each code point alone (1,112,064 of them) through the kernel, and through the
    reference, equals HF."""
    chars = list(map(chr, EVERY))
    want = list(map(hf_step(kind), chars))
    got = run_step(kind, chars)
    assert [(hex(ord(c)), a, b) for c, a, b in zip(chars, got, want) if a != b] == []
    ref = getattr(Reference, {"NFKD": "nfkd", "StripAccents": "strip_accents",
                              "Lowercase": "lowercase"}[kind])
    assert [hex(ord(c)) for c, b in zip(chars, want) if ref(c) != b] == []


def test_python_unicode_differs_where_the_decision_says():
    """Why the tables come from tokenizers (decision 0039): Python 3.11's unicodedata gives
    other answers on these code points."""
    assert hf_step("NFKD")("\u32ff") == "\u32ff" != unicodedata.normalize("NFKD", "\u32ff")
    assert hf_step("Lowercase")("\u1c89") == "\u1c8a" != "\u1c89".lower()
    assert hf_step("StripAccents")("\u07fd") == "\u07fd" and unicodedata.category("\u07fd") == "Mn"
    assert run_step("NFKD", ["\u32ff"]) == ["\u32ff"]
    assert run_step("Lowercase", ["\u1c89"]) == ["\u1c8a"]
    assert run_step("StripAccents", ["\u07fd"]) == ["\u07fd"]


@lru_cache(maxsize=1)
def non_starters():
    """Every code point that HF's table or Python's unicodedata gives a combining class."""
    ours = set(hf_unicode_maps().ccc)
    python = {chr(c) for c in EVERY if unicodedata.combining(chr(c))}
    return sorted(ours | python)


def test_every_pair_of_non_starters_is_ordered_as_hf():
    """NFKD's canonical ordering: every ordered pair of non-starters (~830,000), each after a
    starter, in one text."""
    marks = non_starters()
    assert len(marks) > 800
    text = "".join("a" + x + y for x in marks for y in marks)
    want = hf_step("NFKD")(text)
    assert run_step("NFKD", [text]) == [want]
    assert Reference.nfkd(text) == want


def test_long_runs_of_marks_equal_hf():
    """Runs of up to 300 marks and decomposing characters (insertion sort up to 32, a merge
    sort past it), starters between some of them, at a segment's start and end."""
    marks = non_starters()
    decomposing = [c for c in map(chr, EVERY[:0x3000]) if hf_step("NFKD")(c) != c]
    pool = marks + decomposing[::5] + ["a", "\u3131"]
    rnd = np.random.default_rng(39)
    texts = []
    for n in [0, 1, 2, 31, 32, 33, 34, 64, 100, 300] * 8:
        weights = rnd.random(len(pool)) ** 4
        picks = rnd.choice(len(pool), n, p=weights / weights.sum())
        texts.append("".join(pool[k] for k in picks))
    texts.append("".join(marks))
    texts.append("".join(reversed(marks)) * 3)
    want = list(map(hf_step("NFKD"), texts))
    assert run_step("NFKD", texts) == want
    assert [Reference.nfkd(t) for t in texts] == want


TEXTS = st.lists(st.text(alphabet=st.one_of(st.sampled_from(ALBERT_CHARS),
                                            st.sampled_from(non_starters()),
                                            st.characters(exclude_categories=["Cs"])),
                         max_size=30), min_size=1, max_size=6)


@pytest.mark.parametrize("kind", STEPS)
@settings(max_examples=60, deadline=None)
@given(texts=TEXTS)
def test_hypothesis_texts_through_each_step_equal_hf(kind, texts):
    want = list(map(hf_step(kind), texts))
    assert run_step(kind, texts) == want


@pytest.mark.parametrize("name", ALBERT_FILES)
@settings(max_examples=40, deadline=None)
@given(texts=TEXTS)
def test_albert_normalizer_equals_hf(name, texts):
    """The whole normalizer of each ALBERT json (Replace ``, '', NFKD, StripAccents,
    Lowercase, Precompiled, space runs): kernel and reference equal HF's normalized text."""
    ours, theirs = pair(name)
    texts = [t.replace("x", "``").replace("y", "''").replace("z", "   ") for t in texts]
    want = [theirs.normalizer.normalize_str(t) for t in texts]
    assert run_state(ours._norm, texts) == want
    ref = Reference(doc_of(name))
    assert [ref.normalize(t) for t in texts] == want


def test_albert_json_parses_as_hf_does():
    """The oracle reads the same json corpustok does (no step dropped by a round trip)."""
    doc = doc_of(ALBERT_FILES[0])
    held = json.loads(Tokenizer.from_str(json.dumps(doc)).to_str())["normalizer"]
    assert [s["type"] for s in held["normalizers"]] == \
        [s["type"] for s in doc["normalizer"]["normalizers"]]
