"""Reading a SentencePiece ``.model`` file: a serialized ``ModelProto`` (protobuf, proto2).

A small reader of the documented fields (``sentencepiece_model.proto``), with its own varint
and length-delimited decoding; neither ``protobuf`` nor ``sentencepiece`` is needed at run
time. The result, :class:`SentencePieceModel`, holds the vocabulary as flat arrays ready for
the kernels (piece bytes + offsets, float32 scores, uint8 types), the settings that change
encoding, and the normalizer's precompiled charsmap split into its double-array trie (uint32
units) and its blob of NUL-terminated replacement strings.

Anything in the file that changes how text is encoded and that corpustok does not run is a
ValueError of one line naming it (see :func:`unsupported`); settings that only matter to
training (``split_digits``, ``split_by_*``, ``max_sentencepiece_length``, ...) are read and
ignored, as ``sentencepiece`` itself ignores them when encoding.
"""
import struct
from dataclasses import dataclass, field

import numpy as np

from corpustok.kernels.sentencepiece.model_proto import read_pieces

__all__ = ["SentencePieceModel", "read_model", "parse_model", "NORMAL", "UNKNOWN", "CONTROL",
           "USER_DEFINED", "UNUSED", "BYTE", "UNIGRAM", "BPE"]

# ModelProto.SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
TYPE_NAMES = {NORMAL: "NORMAL", UNKNOWN: "UNKNOWN", CONTROL: "CONTROL",
              USER_DEFINED: "USER_DEFINED", UNUSED: "UNUSED", BYTE: "BYTE"}
# TrainerSpec.ModelType
UNIGRAM, BPE, WORD, CHAR = 1, 2, 3, 4
MODEL_TYPES = {UNIGRAM: "UNIGRAM", BPE: "BPE", WORD: "WORD", CHAR: "CHAR"}

SPACE = "\u2581"  # '▁', what escape_whitespaces writes for ' '
DEFAULT_UNK_SURFACE = " \u2047 "  # TrainerSpec.unk_surface default


class ProtoError(ValueError):
    pass


def read_varint(buf, at, end):
    """``(value, next offset)`` of the protobuf varint at ``buf[at]``, before ``end``;
    ProtoError when it runs past it."""
    value = shift = 0
    while True:
        if at >= end or shift > 63:
            raise ProtoError("a varint runs past its message")
        byte = buf[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def fields(buf, at=0, end=None):
    """``(field number, wire type, value)`` of each field of the message ``buf[at:end]``:
    varints as int, fixed32/fixed64 as their raw bytes, length-delimited as ``(start, end)``
    offsets into ``buf`` (nested messages are read on demand)."""
    end = len(buf) if end is None else end
    while at < end:
        key, at = read_varint(buf, at, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtoError("field number 0")
        if wire == 0:
            value, at = read_varint(buf, at, end)
        elif wire == 1:
            if at + 8 > end:
                raise ProtoError("a fixed64 runs past its message")
            value, at = buf[at:at + 8], at + 8
        elif wire == 2:
            n, at = read_varint(buf, at, end)
            if at + n > end:
                raise ProtoError("a length-delimited field runs past its message")
            value, at = (at, at + n), at + n
        elif wire == 5:
            if at + 4 > end:
                raise ProtoError("a fixed32 runs past its message")
            value, at = buf[at:at + 4], at + 4
        else:
            raise ProtoError(f"wire type {wire} (groups are not used by ModelProto)")
        yield number, wire, value


def _int32(v):
    """A proto int32 read from its varint (negative values are 10-byte varints)."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


# The TrainerSpec fields read, by number: (name, kind, default). kind: 'b' bool, 'i' int32,
# 's' string, 'f' float. Fields not listed are training-only and skipped.
TRAINER_FIELDS = {
    3: ("model_type", "i", UNIGRAM), 4: ("vocab_size", "i", 8000),
    21: ("split_by_unicode_script", "b", True), 23: ("split_by_number", "b", True),
    22: ("split_by_whitespace", "b", True), 24: ("treat_whitespace_as_suffix", "b", False),
    26: ("allow_whitespace_only_pieces", "b", False), 25: ("split_digits", "b", False),
    53: ("pretokenization_delimiter", "s", ""), 35: ("byte_fallback", "b", False),
    40: ("unk_id", "i", 0), 41: ("bos_id", "i", 1), 42: ("eos_id", "i", 2),
    43: ("pad_id", "i", -1), 45: ("unk_piece", "s", "<unk>"), 46: ("bos_piece", "s", "<s>"),
    47: ("eos_piece", "s", "</s>"), 48: ("pad_piece", "s", "<pad>"),
    44: ("unk_surface", "s", DEFAULT_UNK_SURFACE),
}
NORMALIZER_FIELDS = {
    1: ("name", "s", ""), 2: ("precompiled_charsmap", "y", b""),
    3: ("add_dummy_prefix", "b", True), 4: ("remove_extra_whitespaces", "b", True),
    5: ("escape_whitespaces", "b", True), 6: ("normalization_rule_tsv", "s", ""),
}


def _read_spec(buf, span, table):
    out = {name: default for name, _, default in table.values()}
    if span is None:
        return out
    for number, wire, value in fields(buf, *span):
        if number not in table:
            continue
        name, kind, _ = table[number]
        if kind in "bi" and wire == 0:
            out[name] = bool(value) if kind == "b" else _int32(value)
        elif kind in "sy" and wire == 2:
            raw = bytes(buf[value[0]:value[1]])
            out[name] = raw if kind == "y" else raw.decode("utf-8", "replace")
    return out


@dataclass
class SentencePieceModel:
    """The parts of a ``ModelProto`` that encoding and decoding use."""
    pieces: list                  # piece strings, by id
    piece_bytes: np.ndarray       # uint8: the UTF-8 of every piece, concatenated
    piece_off: np.ndarray         # int64 [n+1]: piece i is piece_bytes[piece_off[i]:piece_off[i+1]]
    scores: np.ndarray            # float32 [n]
    types: np.ndarray             # uint8 [n]: NORMAL .. BYTE
    trainer: dict                 # TrainerSpec fields of TRAINER_FIELDS
    normalizer: dict              # NormalizerSpec fields of NORMALIZER_FIELDS
    denormalizer: dict = None     # denormalizer_spec, when the file has one
    charsmap_trie: np.ndarray = field(default=None)    # uint32 double-array units, or None
    charsmap_strings: bytes = b""  # NUL-terminated replacement strings the trie points into

    @property
    def model_type(self):
        return MODEL_TYPES.get(self.trainer["model_type"], str(self.trainer["model_type"]))

    @property
    def byte_fallback(self):
        return self.trainer["byte_fallback"]

    def __len__(self):
        return len(self.pieces)


def parse_model(data, where="a SentencePiece model"):
    """The :class:`SentencePieceModel` of a serialized ``ModelProto``; ValueError of one line
    (prefixed by ``where``) for a damaged file or one that asks for something corpustok does
    not run."""
    buf = memoryview(data)
    pieces, piece_bytes, piece_off, scores, types, spans = \
        _pieces_at_once(buf) or _pieces_by_field(buf, where)
    trainer_span, normalizer_span, denormalizer_span = spans
    try:
        trainer = _read_spec(buf, trainer_span, TRAINER_FIELDS)
        normalizer = _read_spec(buf, normalizer_span, NORMALIZER_FIELDS)
        denormalizer = (_read_spec(buf, denormalizer_span, NORMALIZER_FIELDS)
                        if denormalizer_span is not None else None)
    except ProtoError as e:
        raise ValueError(f"{where}: not a readable ModelProto ({e})") from None
    model = SentencePieceModel(
        pieces=pieces, piece_bytes=piece_bytes, piece_off=piece_off, scores=scores,
        types=types, trainer=trainer, normalizer=normalizer, denormalizer=denormalizer)
    charsmap = normalizer["precompiled_charsmap"]
    if charsmap:
        model.charsmap_trie, model.charsmap_strings = split_charsmap(charsmap, where)
    problem = unsupported(model)
    if problem:
        raise ValueError(f"{where}: {problem}")
    return model


def _pieces_at_once(data):
    """``(pieces, piece_bytes, piece_off, scores, types, spans)`` of a ``ModelProto`` read by
    the kernel (:func:`corpustok.kernels.sentencepiece.model_proto.read_pieces`), or None
    when it declines the file or a piece is not UTF-8 on its own (the reader of
    :func:`_pieces_by_field`, its reference, then reads it or names the problem)."""
    ok, piece_bytes, off, bits, kinds, sp = read_pieces(np.frombuffer(data, np.uint8))
    if not ok or not len(kinds):
        return None
    # Every piece is UTF-8 on its own when all of them together are and none starts with a
    # continuation byte; a piece's characters are then a slice of the whole text.
    try:
        text = piece_bytes.tobytes().decode("utf-8")
    except UnicodeDecodeError:
        return None
    starts = (piece_bytes & 0xC0) != 0x80
    if not starts[off[:-1]].all():
        return None
    chars = np.zeros(len(piece_bytes) + 1, np.int64)
    np.cumsum(starts, out=chars[1:])
    c = chars[off].tolist()
    pieces = [text[c[k]:c[k + 1]] for k in range(len(kinds))]
    spans = [(int(sp[k]), int(sp[k + 1])) if sp[k] >= 0 else None for k in (0, 2, 4)]
    return pieces, piece_bytes, off, bits.view(np.float32), kinds.astype(np.uint8), spans


def _pieces_by_field(buf, where):
    """:func:`_pieces_at_once`, a field at a time in Python (the reference), with the
    ValueError of one line for a damaged file."""
    pieces, scores, types = [], [], []
    trainer_span = normalizer_span = denormalizer_span = None
    try:
        for number, wire, value in fields(buf):
            if number == 1 and wire == 2:
                piece, score, kind = None, 0.0, NORMAL
                for n2, w2, v2 in fields(buf, *value):
                    if n2 == 1 and w2 == 2:
                        piece = bytes(buf[v2[0]:v2[1]]).decode("utf-8")
                    elif n2 == 2 and w2 == 5:
                        score = struct.unpack("<f", v2)[0]
                    elif n2 == 3 and w2 == 0:
                        kind = _int32(v2)
                if not piece:
                    raise ProtoError(f"piece {len(pieces)} is empty")
                if kind not in TYPE_NAMES:
                    raise ProtoError(f"piece {len(pieces)} has unknown type {kind}")
                pieces.append(piece)
                scores.append(score)
                types.append(kind)
            elif number == 2 and wire == 2:
                trainer_span = value
            elif number == 3 and wire == 2:
                normalizer_span = value
            elif number == 5 and wire == 2:
                denormalizer_span = value
    except UnicodeDecodeError:
        raise ValueError(f"{where}: a piece is not UTF-8 (damaged file?)") from None
    except ProtoError as e:
        raise ValueError(f"{where}: not a readable ModelProto ({e})") from None
    if not pieces:
        raise ValueError(f"{where}: a ModelProto without pieces")
    raw = [p.encode("utf-8") for p in pieces]
    off = np.zeros(len(raw) + 1, np.int64)
    np.cumsum([len(r) for r in raw], out=off[1:])
    return (pieces, np.frombuffer(b"".join(raw), np.uint8).copy(), off,
            np.array(scores, np.float32), np.array(types, np.uint8),
            (trainer_span, normalizer_span, denormalizer_span))


def split_charsmap(blob, where=""):
    """``(trie uint32 units, strings bytes)`` of a precompiled charsmap: a little-endian
    uint32 size of the double-array trie, the trie, then the normalized strings."""
    if len(blob) <= 4:
        raise ValueError(f"{where}: the precompiled charsmap is broken (shorter than 5 bytes)")
    size = struct.unpack("<I", blob[:4])[0]
    if size >= len(blob) or size % 4:
        raise ValueError(f"{where}: the precompiled charsmap is broken (trie size {size})")
    trie = np.frombuffer(blob[4:4 + size], "<u4").astype(np.uint32)
    return trie, bytes(blob[4 + size:])


def unsupported(model):
    """What in ``model`` changes encoding and is not implemented, as one phrase; else None."""
    t, n = model.trainer, model.normalizer
    if t["model_type"] not in (UNIGRAM, BPE):
        return (f"a SentencePiece {model.model_type} model: corpustok runs the BPE and "
                "UNIGRAM model types")
    if t["treat_whitespace_as_suffix"]:
        return ("a SentencePiece model with treat_whitespace_as_suffix (the '\u2581' at word "
                "ends): not supported")
    d = model.denormalizer
    if d is not None and d["precompiled_charsmap"]:
        return "a SentencePiece model with a denormalizer (decode-time charsmap): not supported"
    if n["normalization_rule_tsv"] and not n["precompiled_charsmap"]:
        return ("a SentencePiece model whose normalizer is an uncompiled rule TSV: not "
                "supported (sentencepiece uses the precompiled charsmap)")
    types = model.types
    unk = np.flatnonzero(types == UNKNOWN)
    if len(unk) != 1:
        return f"a SentencePiece model with {len(unk)} unknown pieces (sentencepiece wants one)"
    # what sentencepiece 0.2.3 refuses to load (model_interface.cc InitializePieces)
    seen = set()
    normal = (types == NORMAL) | (types == USER_DEFINED) | (types == UNUSED)
    bpe = t["model_type"] == BPE
    for i, p in enumerate(model.pieces):
        if p == "\x00" and types[i] == UNUSED:
            continue  # a placeholder sentencepiece skips
        if "\x00" in p:
            return f"a SentencePiece model whose piece {i} holds a NUL character"
        if len(p.encode()) >= 8000:
            return f"a SentencePiece model whose piece {i} is 8000 bytes or longer"
        key = p if bpe else (bool(normal[i]), p)
        if key in seen:
            return f"a SentencePiece model that defines the piece {p!r} twice"
        seen.add(key)
    if not bpe and not np.isfinite(model.scores).all():
        return "a SentencePiece Unigram model with a NaN or infinite score"
    byte_pieces = [model.pieces[i] for i in np.flatnonzero(types == BYTE)]
    if byte_pieces and not t["byte_fallback"]:
        return "a SentencePiece model with byte pieces but byte_fallback off"
    if t["byte_fallback"]:
        want = {f"<0x{b:02X}>" for b in range(256)}
        if set(byte_pieces) != want or len(byte_pieces) != 256:
            return "a SentencePiece model with byte_fallback but not the 256 <0xXX> pieces"
    return None


def read_model(path):
    """The :class:`SentencePieceModel` of a ``.model`` file."""
    with open(path, "rb") as f:
        return parse_model(f.read(), str(path))
