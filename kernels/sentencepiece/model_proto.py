"""The pieces of a serialized SentencePiece ``ModelProto``, read in one pass.

``corpustok.sentencepiece.model_file`` reads a ``.model`` field by field in Python: a second
for the 256,000 pieces of Gemma's or mT5's file, at every load. This reads the same fields
the same way (the last occurrence of a field wins, unknown fields are skipped by their wire
type) into flat arrays: each piece's bytes, its score's bits and its type, and where the
TrainerSpec, NormalizerSpec and denormalizer messages lie, which are small and left to the
Python reader. Whatever that reader would refuse or might read otherwise (a varint or a
length past its message, a wire type ModelProto does not use, field number 0, an empty piece,
a piece's text given twice, a type outside 1..6) makes this answer "not mine", and the Python
reader, the reference, reads the file and names the problem.
"""
import numpy as np
from numba import njit

NORMAL = 1  # a piece's type when the field is absent (ModelProto.SentencePiece.Type)
MAX_TYPE = 6  # BYTE
PIECES, TRAINER, NORMALIZER, DENORMALIZER = 1, 2, 3, 5  # ModelProto's field numbers


@njit(nogil=True, cache=True, _nrt=False)
def _varint(buf, at, end):
    """``(value, next offset)`` of the varint at ``buf[at]``, as an int64 (a value of 2**63 or
    more is negative), or ``(0, -1)`` when it runs past ``end``, past ten bytes, or past 64
    bits (which the Python reader would keep whole: a field number or a length other than
    the low bits')."""
    value = np.int64(0)
    shift = 0
    while at < end and shift <= 63:
        b = buf[at]
        at += 1
        if shift == 63 and b & 0x7F > 1:
            break
        value |= np.int64(b & 0x7F) << shift
        if b < 0x80:
            return value, at
        shift += 7
    return np.int64(0), np.int64(-1)


@njit(nogil=True, cache=True, _nrt=False)
def _field(buf, at, end):
    """``(number, wire, value, start, next)`` of the field at ``buf[at]``: a varint's value;
    a length-delimited field's bytes at ``buf[start:next]``; ``next`` -1 for a field the
    Python reader refuses (see the module docstring)."""
    key, at = _varint(buf, at, end)
    number, wire = key >> 3, key & 7
    if at < 0 or number <= 0:
        return number, wire, np.int64(0), np.int64(0), np.int64(-1)
    if wire == 0:
        value, nxt = _varint(buf, at, end)
        return number, wire, value, at, nxt
    if wire == 2:
        n, at = _varint(buf, at, end)
        if at < 0 or n < 0 or n > end - at:
            return number, wire, np.int64(0), np.int64(0), np.int64(-1)
        return number, wire, n, at, at + n
    size = 8 if wire == 1 else 4 if wire == 5 else -1
    if size < 0 or size > end - at:
        return number, wire, np.int64(0), np.int64(0), np.int64(-1)
    return number, wire, np.int64(0), at, at + size


@njit(nogil=True, cache=True)
def read_pieces(buf):
    """``(ok, piece_bytes uint8, piece_off int64 [n + 1], score_bits uint32 [n], types int64
    [n], spans int64 [6])`` of the ``ModelProto`` ``buf`` (uint8): piece ``k`` is
    ``piece_bytes[piece_off[k]:piece_off[k + 1]]``; ``spans`` holds ``(start, end)`` of the
    TrainerSpec, NormalizerSpec and denormalizer messages (-1 when absent). ``ok`` False
    (empty arrays) for a file the Python reader should read (see the module docstring).
    Two passes: count, then fill. O(bytes)."""
    end = len(buf)
    spans = np.full(6, -1, np.int64)
    n = 0
    size = 0
    at = 0
    while at < end:  # pass 1: the top level's fields, checked; pieces counted
        number, wire, value, start, at = _field(buf, at, end)
        if at < 0:
            return False, np.empty(0, np.uint8), np.zeros(1, np.int64), \
                np.empty(0, np.uint32), np.empty(0, np.int64), spans
        if wire == 2 and number == PIECES:
            n += 1
            size += value
        elif wire == 2 and (number == TRAINER or number == NORMALIZER or number == DENORMALIZER):
            k = 0 if number == TRAINER else 2 if number == NORMALIZER else 4
            spans[k] = start
            spans[k + 1] = at
    data = np.empty(size, np.uint8)
    off = np.zeros(n + 1, np.int64)
    bits = np.zeros(n, np.uint32)
    kinds = np.full(n, NORMAL, np.int64)
    bad = (False, data[:0], off[:1], bits[:0], kinds[:0], spans)
    k = 0
    j = 0
    at = 0
    while at < end:  # pass 2: each piece's own fields
        number, wire, value, start, at = _field(buf, at, end)
        if wire != 2 or number != PIECES:
            continue
        p0, p1 = np.int64(-1), np.int64(-1)
        q = start
        while q < at:
            n2, w2, v2, s2, q = _field(buf, q, at)
            if q < 0:
                return bad
            if n2 == 1 and w2 == 2:
                if p0 >= 0:  # twice: the Python reader decodes (and may refuse) each
                    return bad
                p0, p1 = s2, q
            elif n2 == 2 and w2 == 5:
                bits[k] = np.uint32(buf[s2]) | np.uint32(buf[s2 + 1]) << 8 | \
                    np.uint32(buf[s2 + 2]) << 16 | np.uint32(buf[s2 + 3]) << 24
            elif n2 == 3 and w2 == 0:
                kinds[k] = v2
        if p1 <= p0 or not 1 <= kinds[k] <= MAX_TYPE:
            return bad
        for t in range(p0, p1):
            data[j] = buf[t]
            j += 1
        k += 1
        off[k] = j
    return True, data[:j], off, bits, kinds, spans
