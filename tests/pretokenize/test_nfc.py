"""NFC: the quick-check table and kernel against ``unicodedata`` on every scalar value, the
streaming cut rule, and NFC tokenizers streaming as they encode whole texts."""
import random
import unicodedata

import numpy as np
import pyarrow as pa
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import TEST_DATA
from corpustok.arrow import utf8_batch
from corpustok.bpe.tokenizer import BytePairTokenizer
from corpustok.nfc import NfcStream, flagged_code_points, nfc_batch

SCALARS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
MARKS = list("\u0301\u0300\u0308\u0323\u0327\u05b0\u0f71\u0f72\u0f74\u1161\u11a8\u0dcf"
             "\u0dca\u093c\u0b3e\u3099")
BASES = list("aeEoAé\u1100\uac00\u0dd9\u0915\u0b47\u304b\u212b\u0958") + [" ", "x"]
nfc_texts = st.lists(st.sampled_from(MARKS + BASES) | st.characters(exclude_categories=("Cs",)),
                     max_size=30).map("".join)


@pytest.fixture(scope="module")
def flagged():
    bits = flagged_code_points()
    return np.unpackbits(bits, bitorder="little")[:0x110000].astype(bool)


def test_table_is_quick_check_not_yes_or_combining(flagged):
    """Against the regex module's NFC_Quick_Check (a newer Unicode: compared on the code
    points ``unicodedata`` knows) and unicodedata's combining classes."""
    qc = regex.compile(r"\p{NFC_QC=N}|\p{NFC_QC=M}")
    expect = np.zeros(0x110000, bool)
    known = np.zeros(0x110000, bool)
    for cp in SCALARS:
        c = chr(cp)
        known[cp] = unicodedata.category(c) != "Cn"
        expect[cp] = bool(unicodedata.combining(c)) or bool(qc.match(c))
    assert np.array_equal(flagged[known], expect[known])
    assert not flagged[~known].any()


def test_unflagged_text_is_nfc_and_a_safe_cut(flagged):
    """Every unflagged scalar, all in one text (in order and shuffled), is in NFC; and text
    cut before any unflagged code point normalizes piecewise."""
    plain = [chr(cp) for cp in SCALARS if not flagged[cp]]
    assert unicodedata.is_normalized("NFC", "".join(plain))
    random.Random(0).shuffle(plain)
    assert unicodedata.is_normalized("NFC", "".join(plain))
    for prefix in ("e", "e\u0301", "\u1100", "\uac00", "\u0dd9", "\u0b47", "A\u030a\u0323"):
        head = unicodedata.normalize("NFC", prefix)
        bad = [c for c in plain if unicodedata.normalize("NFC", prefix + c) != head + c]
        assert not bad, [hex(ord(c)) for c in bad[:10]]


def test_batch_on_every_scalar(flagged):
    """Documents of every scalar value (with marks between them) equal unicodedata's NFC;
    documents that need nothing keep their bytes."""
    rng = random.Random(1)
    chars = [chr(cp) for cp in SCALARS]
    docs = ["".join(chars[k:k + 500]) for k in range(0, len(chars), 500)]
    docs += ["".join(rng.choice(MARKS + BASES) for _ in range(50)) for _ in range(300)]
    docs += ["plain ascii", "", "déjà vu"]
    batch = utf8_batch(docs)
    out = nfc_batch(batch)
    got = pa.Array.from_buffers(pa.string(), len(docs), [None, pa.py_buffer(out.offsets.astype(
        np.int32)), pa.py_buffer(out.data)]).to_pylist()
    assert got == [unicodedata.normalize("NFC", d) for d in docs]
    ready = utf8_batch(["plain ascii", "déjà vu", "中文", "\U0001f600"])
    assert nfc_batch(ready) is ready


def test_batch_counts_replacements_it_makes():
    raw = [b"e\xcc\x81 \xff ok", b"\xff plain", b"A\xcc\x8a"]
    batch = utf8_batch(pa.array(raw, pa.binary()))
    out = nfc_batch(batch)
    assert out.replaced.tolist() == [1, 0, 0]  # the second is left for the kernel to count
    assert out.data[out.offsets[1]:out.offsets[2]].tobytes() == raw[1]


@given(text=nfc_texts, cuts=st.lists(st.integers(0, 30), max_size=5))
@settings(max_examples=500, deadline=None)
def test_stream_equals_whole(text, cuts):
    s = NfcStream()
    out, at = [], 0
    for c in sorted(cuts):
        out.append(s.feed(text[at:max(at, c)]))
        at = max(at, c)
    out.append(s.feed(text[at:]))
    out.append(s.finish())
    assert "".join(out) == unicodedata.normalize("NFC", text)


@pytest.fixture(scope="module")
def qwen_like():
    path = TEST_DATA / "gpt2_4k.tiktoken"
    return BytePairTokenizer.from_tiktoken(path, pretokenizer="qwen2", normalize="NFC")


@given(text=nfc_texts, cuts=st.lists(st.integers(0, 30), max_size=4))
@settings(max_examples=200, deadline=None)
def test_nfc_tokenizer_stream_equals_encode(qwen_like, text, cuts):
    enc = qwen_like.stream()
    got, at = [], 0
    for c in sorted(cuts):
        got += enc.feed(text[at:max(at, c)])
        at = max(at, c)
    got += enc.feed(text[at:]) + enc.finish()
    assert got == qwen_like.encode(text)
    assert qwen_like.decode(got) == unicodedata.normalize("NFC", text)


def test_pipeline_streams_long_nfc_documents(qwen_like):
    """Documents over max_doc_bytes go through the stream in 1 MB slices: same ids."""
    from corpustok.pipeline import encode as pipeline_tokenize
    rng = random.Random(2)
    long_doc = "".join(rng.choice(MARKS + BASES + ["word ", "12 "]) for _ in range(400_000))
    docs = ["Cafe\u0301", long_doc, "plain"]
    ids, offsets, _, _, _ = pipeline_tokenize.encode_documents(qwen_like, pa.array(docs),
                                                               max_doc_bytes=1000)
    assert [ids[a:b].tolist() for a, b in zip(offsets, offsets[1:])] == \
        qwen_like.encode_batch(docs).to_pylist()
