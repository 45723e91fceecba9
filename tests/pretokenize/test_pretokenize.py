"""The split kernel and its pattern compiler against the ``regex`` module (the oracle), for
every named pre-tokenizer and for random patterns of the supported shape. The sweeps over the
whole shared corpus and every UDHR record (``-m slow``) are
tests/parity/test_pretokenize_slow.py."""
import unicodedata

import numpy as np
import pytest
import regex
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from tests.pretokenize.conftest import COMPILED, NAMES
from corpustok.reference import split as split_reference
from corpustok.kernels.split.interpreter import chunk_end
from corpustok.kernels.split.fast import split_batch
from corpustok.pretokenize.patterns import PATTERNS, pattern_named, program, split, split_arrays
from corpustok.pretokenize.pattern import PROPERTY_BITS, UnsupportedPattern, compile_pattern, \
    unicode_props

# Characters that exercise every branch: contractions (and what (?i) folds to s and k),
# the single-space prefix, whitespace that is not U+0020, digits of several scripts, '/',
# punctuation, combining marks, cased letters of every kind (Lt, Lm, Lo), emoji, CJK, RTL.
EDGE = list("'srtvelmdSRTVELMD\u017f\u212a\u0130 \r\n\t\u00a0\u3000\u2028\u0085\u000b\u000c\u001c0123٣४Ⅻ½"
            "!?.,;:-_\"()[]{}@#$%&*/\\+=<>|~^`\u0301\u0308\u20dd\u200d\ufe0f\ufffd"
            "aZéßΩжשعक中文日本語한국어ǅʰHELLOWorld") + ["\U0001f600", "\U0001f44d\U0001f3fd",
                                                 "\U0001d11e"]
texts = st.lists(st.one_of(st.sampled_from(EDGE), st.characters(exclude_categories=("Cs",))),
                 max_size=40).map("".join)
# Texts for references with older Unicode tables (tiktoken and HF: 16.0; ours, from the regex
# module: 18.0) leave out what Python's unicodedata (14.0) has not assigned
# (docs/unicode_differences.md)
assigned_texts = texts.map(lambda t: "".join(c for c in t if unicodedata.category(c) != "Cn"))


def batch_of(raw_docs):
    data = np.frombuffer(b"".join(raw_docs) or b"\0", np.uint8)
    offsets = np.zeros(len(raw_docs) + 1, np.int64)
    np.cumsum([len(r) for r in raw_docs], out=offsets[1:])
    return data, offsets


def chunks_of(raw_docs, name):
    """Per document, the byte strings of its chunks as the batch kernel cuts them."""
    data, offsets = batch_of(raw_docs)
    ends, chunk_offsets = split_arrays(data, offsets, name)
    raw = data.tobytes()
    out = []
    for d in range(len(raw_docs)):
        start = int(offsets[d])
        doc = []
        for e in ends[chunk_offsets[d]:chunk_offsets[d + 1]].tolist():
            doc.append(raw[start:e])
            start = e
        assert start == offsets[d + 1]
        out.append(doc)
    return out


def isolated(rx, text):
    """``regex`` matches plus the text between them as pieces (HF ``Split`` "isolated"):
    ``findall`` itself for a pattern that matches everywhere."""
    out, at = [], 0
    for m in rx.finditer(text):
        if m.start() > at:
            out.append(text[at:m.start()])
        out.append(m.group())
        at = m.end()
    return out + ([text[at:]] if at < len(text) else [])


@pytest.mark.parametrize("name", NAMES)
@given(text=texts)
@settings(max_examples=400, deadline=None)
@example(text="they're 've 'll 'd 'm 's 't 'S 'Re ''s 'ſ 'LL")
@example(text="a  b\n\n c\r\n d \t e\u00a0 f\u3000g   ")
@example(text="   \n")
@example(text=" \u0301é 1２ !! ?x 12345 x//\n\n/")
@example(text="HELLO World's ǅemo ʰa ABC\u0301d CamelCase")
def test_split_equals_regex(name, text):
    assert split(text, name) == COMPILED[name].findall(text)


@pytest.mark.parametrize("name", NAMES)
@given(docs=st.lists(texts, max_size=8))
@settings(max_examples=60, deadline=None)
def test_batch_equals_regex_per_document(name, docs):
    got = chunks_of([t.encode() for t in docs], name)
    assert [[c.decode() for c in doc] for doc in got] == [COMPILED[name].findall(t)
                                                          for t in docs]


@pytest.mark.parametrize("name", NAMES)
@given(docs=st.lists(st.binary(max_size=30), max_size=6))
@settings(max_examples=150, deadline=None)
@example(docs=[b"ab\xff cd", b"\xe2\x82 x\xf0\x9f\x98", b"\xed\xa0\x80's"])
def test_invalid_utf8_splits_like_replace_decoding(name, docs):
    got = chunks_of(docs, name)
    want = [COMPILED[name].findall(raw.decode("utf-8", "replace")) for raw in docs]
    assert [[c.decode("utf-8", "replace") for c in doc] for doc in got] == want


def _check_reach(raw, prog):
    """Every chunk whose reach fits a prefix of the text is that prefix's chunk too: what a
    streaming encoder relies on. Cuts at every byte, mid-character included."""
    data = np.frombuffer(raw or b"\0", np.uint8)
    i = 0
    while i < len(raw):
        j, reach = chunk_end(data, i, len(raw), prog)
        assert i < j <= len(raw) and reach > i
        for cut in range(i + 1, len(raw)):
            e, r = chunk_end(data, i, cut, prog)
            if r <= cut:
                assert (e, r) == (j, reach), (raw, i, cut)
        i = j


@pytest.mark.parametrize("name", NAMES)
@given(text=texts)
@settings(max_examples=150, deadline=None)
@example(text="  b")
@example(text="'r 're \n\n\n  \n x")
@example(text="ABC\u0301def")
def test_reach_makes_chunks_final(name, text):
    _check_reach(text.encode(), program(name))


@pytest.mark.parametrize("name", NAMES)
@given(raw=st.binary(max_size=16))
@settings(max_examples=100, deadline=None)
@example(raw=b"a\xe4\xb8\xad")
def test_reach_with_cut_code_points(name, raw):
    _check_reach(raw, program(name))


def test_reach_is_not_overcautious():
    # "\n\n" followed by more whitespace can still grow (\s*[\r\n]+), "a b" cannot
    prog = program("cl100k")
    data = np.frombuffer(b"x\n\n  ", np.uint8)
    assert chunk_end(data, 1, 5, prog) == (3, 6)  # read to the end: not final
    data = np.frombuffer(b"ab cd", np.uint8)
    assert chunk_end(data, 0, 5, prog) == (2, 3)


def test_property_table_matches_regex():
    props = unicode_props()[0]
    everything = "".join(map(chr, range(0x110000)))
    for name, bit in PROPERTY_BITS.items():
        want = np.zeros(0x110000, bool)
        for m in regex.finditer(r"\s+" if name == "s" else rf"\p{{{name}}}+", everything):
            want[m.start():m.end()] = True
        assert np.array_equal((props & bit) != 0, want), name


def test_case_folds_match_regex():
    _, fold_from, fold_to = unicode_props()
    for a, b in zip(fold_from.tolist(), fold_to.tolist()):
        assert regex.fullmatch(f"(?i:{chr(b)})", chr(a))
    assert {chr(a) for a in fold_from.tolist()} >= {"\u017f", "\u212a"}


def test_names_and_aliases():
    assert pattern_named("llama3") == PATTERNS["cl100k"]
    assert pattern_named("llama4") == PATTERNS["o200k"]
    assert pattern_named(r"\s+|\S+") == r"\s+|\S+"
    with pytest.raises(ValueError, match="unknown pre-tokenizer 'gpt5'"):
        pattern_named("gpt5")
    with pytest.raises(TypeError):
        pattern_named(3)


@pytest.mark.parametrize("pattern", [
    r"(\s+)|\S+",           # a capturing group changes what findall returns
    r"\s+?|\S+",            # lazy
    r"\w+|\s+",             # \w is not among the properties
    r"^a|b",                # anchors
    r"a|",                  # an empty branch
    r"\p{L}*|\s+",          # can match the empty string
    r"[\p{L}a]+\p{Ll}+",    # X+Y+ that overlap would backtrack
    r"\p{L}*\p{Ll}{2,}",    # X*Y{2,}
    r"\p{L}+(?!\p{Lu})",    # lookahead overlapping its run
    r"(?i:é)",              # case folding beyond ASCII
    r"(?=a)a",              # positive lookahead
    r"\p{Greek}+",          # an unknown property
    r"a)b",
])
def test_unsupported_patterns_are_refused(pattern):
    with pytest.raises(UnsupportedPattern):
        compile_pattern(pattern)


_CLASSES = [r"\p{L}", r"\p{Lu}", r"\p{Ll}", r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
            r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]", r"\p{N}", r"\s", r"\S", r"[\r\n]", r"[\r\n/]", " ",
            r"[^\s\p{L}\p{N}]", r"[^\r\n\p{L}\p{N}]", r"[a-c]", r"\p{M}", "'", r"[^a]", r"."]
_QUANT = ["", "?", "*", "+", "{1,3}", "{2}", "{1,}"]
_TAILS = ["", r"(?i:'s|'t|'re)?", r"[\r\n]*", "(?:x|yz)?"]
_ALPHABET = "aAbBcxyz'sStTrRe \r\n\t1٣/!.\u0301ǅʰ中\u017f\u212a\u00a0"


@st.composite
def branches(draw):
    lead = draw(st.sampled_from(["", *[c + "?" for c in _CLASSES[:14]]]))
    run = draw(st.sampled_from(_CLASSES)) + draw(st.sampled_from(_QUANT))
    second = draw(st.sampled_from(["", *[c + q for c in _CLASSES for q in ("+", "*")]]))
    tail = draw(st.sampled_from(_TAILS))
    ahead = draw(st.sampled_from(["", r"(?!\S)", r"(?!\s)", r"(?!\p{L})"]))
    literal = draw(st.sampled_from(["", "'s|'t", "(?i:'ll|'d)", "xy"]))
    return literal or lead + run + second + tail + ahead


@given(parts=st.lists(branches(), min_size=1, max_size=5),
       text=st.lists(st.sampled_from(_ALPHABET), max_size=24).map("".join))
@settings(max_examples=3000, deadline=None)
@example(parts=[r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"],
         text="\u0301ABC")
def test_random_patterns_equal_regex(parts, text):
    """Whatever the compiler accepts splits as ``regex`` does (unmatched text as its own
    pieces, as HF's isolated Split keeps it)."""
    pattern = "|".join(parts)
    try:
        prog = compile_pattern(pattern).program
    except UnsupportedPattern:
        assume(False)
    rx = regex.compile(pattern)
    raw = text.encode()
    data = np.frombuffer(raw or b"\0", np.uint8)
    got, i = [], 0
    while i < len(raw):
        j = chunk_end(data, i, len(raw), prog)[0]
        got.append(raw[i:j].decode())
        i = j
    assert got == isolated(rx, text), pattern
    _check_reach(raw, prog)


def _check_reference(raw, prog):
    """The pure-Python reference gives the kernel's ``(end, reach)`` at every chunk start, for
    the whole text and for every prefix of it (cut code points included)."""
    data = np.frombuffer(raw or b"\0", np.uint8)
    ref = split_reference.Program(prog)
    i = 0
    while i < len(raw):
        for cut in range(i + 1, len(raw) + 1):
            assert split_reference.chunk_end(raw, i, cut, ref) == chunk_end(data, i, cut, prog), \
                (raw, i, cut)
        i = chunk_end(data, i, len(raw), prog)[0]


@pytest.mark.parametrize("name", NAMES)
@given(text=texts)
@settings(max_examples=150, deadline=None)
@example(text="they're 'S 'Re ''s '\u017f 'LL x//\n\n  \u0301\u00e9 HELLO World's \u01c5emo 12345")
def test_reference_equals_kernel(name, text):
    assert split_reference.split(text, PATTERNS[name]) == split(text, name)
    _check_reference(text.encode(), program(name))


@pytest.mark.parametrize("name", NAMES)
@given(raw=st.binary(max_size=24))
@settings(max_examples=100, deadline=None)
@example(raw=b"ab\xff cd\xe2\x82 x\xf0\x9f\x98\xed\xa0\x80's")
def test_reference_equals_kernel_on_invalid_utf8(name, raw):
    assert split_reference.split(raw, PATTERNS[name]) == chunks_of([raw], name)[0]
    _check_reference(raw, program(name))


@given(parts=st.lists(branches(), min_size=1, max_size=5),
       text=st.lists(st.sampled_from(_ALPHABET), max_size=24).map("".join))
@settings(max_examples=1000, deadline=None)
@example(parts=[r"[a-c]{2}(?:x|yz)?"], text="ab")  # a bounded run that ends at the end
def test_reference_equals_kernel_random_patterns(parts, text):
    try:
        prog = compile_pattern("|".join(parts)).program
    except UnsupportedPattern:
        assume(False)
    _check_reference(text.encode(), prog)


def test_empty_documents_and_batch():
    assert split("") == []
    assert chunks_of([b"", b"a b", b""], "gpt2") == [[], [b"a", b" b"], []]
    data, offsets = batch_of([])
    assert split_batch(data, offsets, program(), np.empty(1, np.int64),
                       np.empty(1, np.int64)) == 0


def test_type_error():
    with pytest.raises(TypeError):
        split(b"bytes")
