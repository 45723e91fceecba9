"""The substrate codec against pure-Python references built on Python's own codecs."""
import hashlib
import random

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpustok import substrate as ube
from corpustok.reference import decode_symbols as ref_decode
from corpustok.reference import symbol_ids as ref_symbol_ids
from corpustok.reference import symbol_string

SUBSTRATES = ("utf8", "utf16", "ube")
ALL_SCALARS = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
GPT2_TABLE_SHA256 = "3bd96da9fcd14021199c10cd38baa447294f336f25d71c2881b5cfabaf6f7c28"


# --- tables and fixed vectors ------------------------------------------------------------
def test_gpt2_byte_table_matches_published_digest():
    table = ube.bytes_to_unicode()
    assert hashlib.sha256("".join(table).encode()).hexdigest() == GPT2_TABLE_SHA256
    assert table[0x20] == "\u0120" and table[0x0A] == "\u010a" and table[0xAD] == "\u0143"


def test_alphabets():
    assert len(ube.alphabet("utf8")) == len(ube.alphabet("utf16")) == 256
    second = ube.alphabet("ube")[256:]
    assert second == [chr(0xE100 + b) for b in range(256)]
    assert len(set(ube.alphabet("ube"))) == 512


def test_issue_vector_gpu_xingneng():
    s = ube.to_symbols("GPU性能")
    assert [ord(c) for c in s] == [0x47, 0x50, 0x55, 0xE127, 0xE160, 0xE1FD, 0xE180]
    assert len(ube.to_symbols("GPU性能", "utf8")) == 9
    assert len(ube.to_symbols("GPU性能", "utf16")) == 10


def test_bbpe16_reference_vectors():
    # Vectors from the BBPE16 fork's tests: UTF-16LE bytes of the text.
    assert ube.symbols_batch(["가나다"], "utf16").to_pylist()[0] == [0x00, 0xAC, 0x98, 0xB0,
                                                                    0xE4, 0xB2]
    assert ube.symbols_batch(["😀"], "utf16").to_pylist()[0] == [0x3D, 0xD8, 0x00, 0xDE]
    assert ube.from_symbols(symbol_string([0x48, 0x00, 0x65]), "utf16") == "H\ufffd"


# --- exhaustive: every Unicode scalar value ----------------------------------------------
@pytest.fixture(scope="module")
def scalars():
    return pa.array(ALL_SCALARS, type=pa.string())


@pytest.mark.parametrize("substrate", SUBSTRATES)
def test_every_scalar_alone_round_trips_with_expected_counts(scalars, substrate):
    assert len(scalars) == 1_112_064
    lists = ube.symbols_batch(scalars, substrate)
    counts = np.diff(lists.offsets.to_numpy())
    cps = np.array([c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF])
    utf8_len = np.select([cps < 0x80, cps < 0x800, cps < 0x10000], [1, 2, 3], 4)
    per_len = {"utf8": [1, 2, 3, 4], "utf16": [2, 2, 2, 4], "ube": [1, 2, 2, 4]}[substrate]
    assert np.array_equal(counts, np.array(per_len)[utf8_len - 1])
    back = ube.from_symbols_batch(lists, substrate)
    assert back.equals(scalars.cast(pa.large_string()))


@pytest.mark.parametrize("substrate", SUBSTRATES)
def test_every_scalar_symbols_equal_reference(scalars, substrate):
    flat = ube.symbols_batch(scalars, substrate).flatten().to_numpy()
    expected = np.array(ref_symbol_ids("".join(ALL_SCALARS), substrate), dtype=np.uint16)
    assert np.array_equal(flat, expected)


@pytest.mark.parametrize("substrate", SUBSTRATES)
def test_random_mixtures_of_all_scalars_round_trip(substrate):
    rng = random.Random(7)
    texts = ["".join(rng.choices(ALL_SCALARS, k=rng.randint(0, 64))) for _ in range(20_000)]
    lists = ube.symbols_batch(texts, substrate)
    assert ube.from_symbols_batch(lists, substrate).to_pylist() == texts
    for t, ids in zip(texts[:2000], lists.to_pylist()[:2000]):
        assert ids == ref_symbol_ids(t, substrate)


# --- property tests ----------------------------------------------------------------------
# PUA characters U+E100-U+E1FF in the input are ordinary 3-byte characters and must survive.
text_st = st.text(alphabet=st.one_of(
    st.characters(codec="utf-8"),
    st.characters(min_codepoint=0xE100, max_codepoint=0xE1FF),
    st.sampled_from(list("aé性😀 \n\u0120\u0143"))), max_size=60)


@settings(max_examples=300, deadline=None)
@given(text_st, st.sampled_from(SUBSTRATES))
def test_text_round_trips_and_equals_reference(text, substrate):
    s = ube.to_symbols(text, substrate)
    assert s == symbol_string(ref_symbol_ids(text, substrate))
    assert ube.from_symbols(s, substrate) == text


symbols_st = st.lists(st.integers(0, 511), max_size=40)


@settings(max_examples=500, deadline=None)
@given(symbols_st, st.sampled_from(SUBSTRATES))
def test_malformed_symbol_sequences_decode_as_python_replace(ids, substrate):
    if substrate != "ube":
        ids = [i & 0xFF for i in ids]
    assert ube.from_symbols(symbol_string(ids), substrate) == ref_decode(ids, substrate)


@settings(max_examples=300, deadline=None)
@given(symbols_st, st.lists(st.integers(0, 40), max_size=6), st.sampled_from(SUBSTRATES))
def test_stream_decoder_equals_one_shot_for_every_split(ids, cuts, substrate):
    if substrate != "ube":
        ids = [i & 0xFF for i in ids]
    dec = ube.StreamDecoder(substrate)
    pieces, start = [], 0
    for cut in sorted(set(c for c in cuts if c <= len(ids))) + [len(ids)]:
        pieces.append(dec.feed(ids[start:cut]))
        start = cut
    pieces.append(dec.finish())
    assert "".join(pieces) == ref_decode(ids, substrate)


def test_stream_decoder_one_symbol_at_a_time_on_real_text():
    text = "Ὅτι ἀναγνώριση 人人生而自由 ⴰⵍⵖⵓ 🇺🇳 emoji 👩‍👩‍👧 done"
    for substrate in SUBSTRATES:
        ids = ube.symbols_batch([text], substrate).to_pylist()[0]
        dec = ube.StreamDecoder(substrate)
        assert "".join(dec.feed([i]) for i in ids) + dec.finish() == text


def test_stream_decoder_flush_ends_both_buffers():
    dec = ube.StreamDecoder("ube")
    assert dec.feed([0xE4, 0xBD]) == ""           # a cut UTF-8 character is pending
    assert dec.flush() == "\ufffd"                # a special token ends it
    assert dec.feed([256 + 0x27, 256 + 0x60]) + dec.finish() == "性"


# --- invalid input -----------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=30), max_size=8), st.sampled_from(SUBSTRATES))
def test_invalid_utf8_binary_is_read_like_python_replace(blobs, substrate):
    lists, replaced = ube.symbols_batch(pa.array(blobs, pa.binary()), substrate,
                                        return_replaced=True)
    for blob, ids, n in zip(blobs, lists.to_pylist(), replaced):
        text = blob.decode("utf-8", "replace")
        assert ids == ref_symbol_ids(text, substrate)
        assert n == text.count("\ufffd") - blob.count("\ufffd".encode())


def test_lone_surrogates_are_replaced_and_counted_in_batches():
    lists, replaced = ube.symbols_batch(["a\ud800b", "ok", "\udfff\ud83d"], "ube",
                                        return_replaced=True)
    assert replaced.tolist() == [1, 0, 2]
    assert ube.from_symbols_batch(lists).to_pylist() == ["a\ufffdb", "ok", "\ufffd\ufffd"]
    with pytest.raises(ValueError, match="lone surrogate"):
        ube.to_symbols("x\ud800")


def test_nulls_empty_slices_chunks_and_string_types():
    arr = pa.array(["drop", "", None, "ab", "性"])
    for texts in (arr.slice(1), pa.chunked_array([arr.slice(1, 2), arr.slice(3)]),
                  arr.slice(1).cast(pa.large_string()), [t for t in arr.slice(1).to_pylist()]):
        lists = ube.symbols_batch(texts, "ube")
        assert lists.to_pylist() == [[], None, [97, 98], [256 + 0x27, 256 + 0x60]]
        assert ube.from_symbols_batch(lists).to_pylist() == ["", None, "ab", "性"]


def test_boundary_errors_are_clear():
    with pytest.raises(ValueError, match="unknown substrate"):
        ube.to_symbols("a", "utf32")
    with pytest.raises(ValueError, match=r"symbols\[1\].*not a symbol of the 'utf8'"):
        ube.from_symbols("a\ue100", "utf8")
    with pytest.raises(ValueError, match=r"symbols\[0\]"):
        ube.from_symbols(" ", "ube")               # byte 0x20 is the symbol "\u0120"
    with pytest.raises(TypeError):
        ube.symbols_batch("not a list")
    with pytest.raises(ValueError, match="outside"):
        ube.from_symbols_batch(pa.array([[300]], pa.list_(pa.uint16())), "utf8")


def test_device_selection_without_a_gpu(monkeypatch):
    from corpustok.kernels import cuda

    monkeypatch.setattr(cuda, "cuda_available", lambda: False)
    texts = ["GPU性能", None, "ok"]
    expected = ube.symbols_batch(texts, "ube")
    assert ube.symbols_batch(texts, "ube", device="auto").equals(expected)
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        ube.symbols_batch(texts, "ube", device="cuda")
    with pytest.raises(ValueError, match="unknown device"):
        ube.symbols_batch(texts, "ube", device="tpu")


def test_ids_must_be_integers_in_range():
    lists = pa.array([[65608, 65641]], pa.list_(pa.int64()))  # would wrap to 'Hi' as uint16
    with pytest.raises(ValueError, match="outside"):
        ube.from_symbols_batch(lists, "ube")
    with pytest.raises(TypeError, match="integers"):
        ube.from_symbols_batch([[1.5]], "ube")
    with pytest.raises(TypeError, match="integers"):
        ube.StreamDecoder("ube").feed(["7"])
    assert ube.from_symbols_batch(pa.chunked_array([pa.array([[104], None], pa.list_(
        pa.int32()))]), "utf8").to_pylist() == ["h", None]


def test_lists_may_mix_str_and_bytes_like_a_binary_column():
    lists, replaced = ube.symbols_batch(["a", b"b", b"c\xff", None], "utf8",
                                        return_replaced=True)
    assert lists.to_pylist() == [[97], [98], ref_symbol_ids("c\ufffd", "utf8"), None]
    assert replaced.tolist() == [0, 0, 1, 0]
    with pytest.raises(TypeError, match=r"texts\[1\] is int"):
        ube.symbols_batch(["a", 5])
