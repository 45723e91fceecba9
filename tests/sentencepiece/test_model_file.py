"""Reading a ``.model``: the one-pass kernel (kernels/sentencepiece/model_proto.py) reads what
the field-by-field reader reads, or declines and leaves the file, and its error, to it."""
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpustok.sentencepiece.model_file import _pieces_at_once, _pieces_by_field, parse_model
from tests.conftest import protobuf_varint as varint
from tests.sentencepiece.conftest import PACKAGED, SHARED_FILES, model_path


def same(fast, slow):
    return fast[0] == slow[0] and list(fast[5]) == list(slow[5]) and all(
        a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))
        for a, b in zip(fast[1:5], slow[1:5]))


@pytest.mark.parametrize("name", [f"shared:{f}" for f in SHARED_FILES] +
                         [f"mistral-common:{f}" for f in PACKAGED])
def test_real_models_read_at_once_as_field_by_field(name):
    """Llama 2, Mistral, Gemma, T5, mT5, ALBERT (../shared, T5 and mT5 also from diffsynth on
    a fresh clone) and mistral-common's five."""
    path = model_path(name)
    buf = memoryview(path.read_bytes())
    fast = _pieces_at_once(buf)
    assert fast is not None
    assert same(fast, _pieces_by_field(buf, str(path)))


def field(number, wire, payload):
    """One protobuf field: its key, then ``payload`` (a varint's value, a length-delimited
    field's bytes, or a fixed field's bytes)."""
    key = varint(number << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


texts = st.one_of(st.text(min_size=0, max_size=6).map(str.encode),
                  st.binary(min_size=0, max_size=4))  # pieces that are not UTF-8 too
extras = st.lists(st.tuples(st.integers(4, 40), st.sampled_from([0, 1, 2, 5, 3])), max_size=2)


@st.composite
def piece_message(draw):
    """A SentencePiece message: piece, score, type in any order, some absent, some twice,
    with unknown fields (of ModelProto's wire types, and a group's, which it never uses)."""
    parts = []
    for _ in range(draw(st.integers(0, 2))):
        parts.append(field(1, 2, draw(texts)))
    if draw(st.booleans()):
        parts.append(field(2, 5, struct.pack("<f", draw(st.floats(width=32)))))
    for _ in range(draw(st.integers(0, 2))):
        parts.append(field(3, 0, draw(st.sampled_from([1, 2, 3, 4, 5, 6, 0, 7, 2**64 - 1]))))
    for number, wire in draw(extras):
        parts.append(field(number, wire, {0: 5, 1: b"8bytes..", 2: b"xy", 5: b"4byt",
                                          3: b""}[wire]))
    return b"".join(draw(st.permutations(parts)))


@st.composite
def model_proto(draw):
    out = [field(1, 2, draw(piece_message())) for _ in range(draw(st.integers(0, 6)))]
    for number in draw(st.lists(st.sampled_from([2, 3, 5, 7]), max_size=4)):
        out.insert(draw(st.integers(0, len(out))), field(number, 2, b"\x08\x01"))
    if draw(st.booleans()):
        wire = draw(st.sampled_from([0, 1, 5]))
        out.insert(draw(st.integers(0, len(out))),
                   field(9, wire, {0: 3, 1: bytes(8), 5: bytes(4)}[wire]))
    data = b"".join(out)
    cut = draw(st.sampled_from([None, None, None, "end", "middle", "zero"]))
    if cut == "end" and data:
        data = data[:-1]
    elif cut == "middle" and len(data) > 2:
        data = data[:len(data) // 2]
    elif cut == "zero":
        data += b"\x00\x01"  # field number 0
    return data


@settings(max_examples=500, deadline=None)
@given(data=model_proto())
def test_any_model_proto_read_at_once_or_by_field_alike(data):
    buf = memoryview(data)
    fast = _pieces_at_once(buf)
    try:
        slow = _pieces_by_field(buf, "m")
    except ValueError:
        assert fast is None
        return
    if fast is not None:
        assert same(fast, slow)


def test_varints_past_64_bits_are_left_to_the_reference():
    """A key or a length whose varint holds more than 64 bits: the Python reader keeps the
    whole value (an unknown field number it skips; a length past the message it refuses); the
    kernel declines rather than read the low bits as field 1 or a short length."""
    piece = field(1, 2, field(1, 2, b"<unk>") + field(3, 0, 2))
    msg = field(1, 2, b"x")  # a piece's message, under a key of 2**64 + 10 (field 2**61 + 1)
    long_key = bytes([0x8A] + [0x80] * 8 + [0x02]) + varint(len(msg)) + msg
    long_length = b"\x0a" + bytes([0x85] + [0x80] * 8 + [0x02]) + b"x"
    for data in (piece + long_key + piece, piece + long_length):
        buf = memoryview(data)
        assert _pieces_at_once(buf) is None
    assert _pieces_by_field(memoryview(piece + long_key + piece), "m")[0] == ["<unk>", "<unk>"]
    with pytest.raises(ValueError, match="runs past its message"):
        _pieces_by_field(memoryview(piece + long_length), "m")


def test_a_damaged_model_is_still_named():
    good = field(1, 2, field(1, 2, b"<unk>") + field(3, 0, 2)) + \
        field(1, 2, field(1, 2, "\u2581the".encode()) + field(3, 0, 1)) + \
        field(2, 2, b"\x18\x02")
    assert parse_model(good).pieces == ["<unk>", "\u2581the"]
    for bad, words in [(good[:-1], "runs past its message"),
                       (field(1, 2, field(1, 2, b"\xff")) + good, "a piece is not UTF-8"),
                       (field(1, 2, field(3, 0, 1)) + good, "piece 0 is empty"),
                       (field(1, 2, field(1, 2, b"x") + field(3, 0, 9)) + good,
                        "piece 0 has unknown type 9")]:
        with pytest.raises(ValueError, match=words):
            parse_model(bad)
