"""GPT-2 split kernel against the ``regex`` module (the external oracle)."""
import json
import lzma

import numpy as np
import pytest
import regex
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import read_xz_text, shared_corpus_files
from corpustok.kernels.split import LOOKAHEAD, chunk_end, split_batch
from corpustok.pretokenize import GPT2_PATTERN, gpt2_classes, split, split_arrays

PAT = regex.compile(GPT2_PATTERN)

# Characters that exercise every branch: contractions, the single-space prefix, whitespace
# that is not U+0020 (\r\n, tab, NBSP, U+3000, U+2028, U+0085), digits of several scripts,
# punctuation, combining marks, emoji with ZWJ/variation selectors, CJK, Hangul, RTL.
EDGE = list("'srtvelmdSRTVELMD \r\n\t\u00a0\u3000\u2028\u0085\u000b\u000c\u001c0123٣४Ⅻ½"
            "!?.,;:-_\"()[]{}@#$%&*/\\+=<>|~^`\u0301\u0308\u20dd\u200d\ufe0f\ufffd"
            "aZéßΩжשعक中文日本語한국어") + ["\U0001f600", "\U0001f44d\U0001f3fd", "\U0001d11e"]
texts = st.lists(st.one_of(st.sampled_from(EDGE), st.characters(exclude_categories=("Cs",))),
                 max_size=40).map("".join)


def batch_of(raw_docs):
    data = np.frombuffer(b"".join(raw_docs) or b"\0", np.uint8)
    offsets = np.zeros(len(raw_docs) + 1, np.int64)
    np.cumsum([len(r) for r in raw_docs], out=offsets[1:])
    return data, offsets


def chunks_of(raw_docs):
    """Per document, the byte strings of its chunks as the batch kernel cuts them."""
    data, offsets = batch_of(raw_docs)
    ends, chunk_offsets = split_arrays(data, offsets)
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


@given(texts)
@settings(max_examples=1500, deadline=None)
@example("they're 've 'll 'd 'm 's 't 'S 'Re ''s")
@example("a  b\n\n c\r\n d \t e\u00a0 f\u3000g   ")
@example("   \n")
@example(" \u0301é 1２ !! ?x")
def test_split_equals_regex(text):
    assert split(text) == PAT.findall(text)


@given(st.lists(texts, max_size=8))
@settings(max_examples=200, deadline=None)
def test_batch_equals_regex_per_document(docs):
    got = chunks_of([t.encode() for t in docs])
    assert [[c.decode() for c in doc] for doc in got] == [PAT.findall(t) for t in docs]


@given(st.lists(st.binary(max_size=30), max_size=6))
@settings(max_examples=500, deadline=None)
@example([b"ab\xff cd", b"\xe2\x82 x\xf0\x9f\x98", b"\xed\xa0\x80's"])
def test_invalid_utf8_splits_like_replace_decoding(docs):
    got = chunks_of(docs)
    want = [PAT.findall(raw.decode("utf-8", "replace")) for raw in docs]
    assert [[c.decode("utf-8", "replace") for c in doc] for doc in got] == want


@given(texts)
@settings(max_examples=500, deadline=None)
@example("  b")
@example("'r")
def test_lookahead_bound(text):
    """A chunk end is final once LOOKAHEAD code points follow it in a truncated buffer."""
    raw = text.encode()
    data = np.frombuffer(raw or b"\0", np.uint8)
    cls = gpt2_classes()
    cuts = [len(text[:k].encode()) for k in range(len(text) + 1)]  # code point boundaries
    i = 0
    while i < len(raw):
        j = chunk_end(data, i, len(raw), cls)
        after = cuts.index(j)
        for cut in cuts[after + LOOKAHEAD:]:
            assert chunk_end(data, i, cut, cls) == j
        i = j


def test_lookahead_is_tight():
    # With only one code point after the end the answer can still change.
    cls = gpt2_classes()
    data = np.frombuffer(b"  b", np.uint8)
    assert chunk_end(data, 0, 3, cls) == 1 and chunk_end(data, 0, 2, cls) == 2


def test_class_table_matches_regex_on_samples():
    cls = gpt2_classes()
    assert cls.shape == (0x110000,)
    for cp in [*range(0, 0x3000), *range(0xFF00, 0x10000), 0x1F600, 0x20000, 0x10FFFF]:
        ch = chr(cp)
        want = (bool(regex.match(r"\p{L}", ch)) * 1 + bool(regex.match(r"\p{N}", ch)) * 2
                + bool(regex.match(r"\s", ch)) * 4)
        assert cls[cp] == want, hex(cp)


def test_empty_documents_and_batch():
    assert split("") == []
    assert chunks_of([b"", b"a b", b""]) == [[], [b"a", b" b"], []]
    data, offsets = batch_of([])
    assert split_batch(data, offsets, gpt2_classes(), np.empty(1, np.int64),
                       np.empty(1, np.int64)) == 0


def test_type_error():
    with pytest.raises(TypeError):
        split(b"bytes")


def _assert_parity(lines, name):
    bad = [t for t in lines if split(t) != PAT.findall(t)]
    assert not bad, f"{name}: {len(bad)} mismatches, first {bad[0]!r}"


@pytest.mark.slow
@pytest.mark.parametrize("path", shared_corpus_files(), ids=lambda p: p.name)
def test_shared_corpus_parity(shared_data, path):
    text = read_xz_text(path)
    raw = text.encode()
    data = np.frombuffer(raw, np.uint8)
    ends, _ = split_arrays(data, np.array([0, len(raw)], np.int64))
    starts = np.concatenate([[0], ends[:-1]])
    got = [raw[a:b].decode() for a, b in zip(starts.tolist(), ends.tolist())]
    want = PAT.findall(text)
    assert len(got) == len(want) and got == want, path.name


@pytest.mark.slow
def test_udhr_parity(shared_data):
    with lzma.open(shared_data / "udhr" / "udhr.jsonl.xz", "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    lines = [v for d in docs for v in d.values() if isinstance(v, str)]
    _assert_parity(lines, "udhr.jsonl")
