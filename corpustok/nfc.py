"""Unicode NFC for tokenizers that normalize first (Qwen): Python's ``unicodedata`` rules, with a
quick check in a kernel so text already in NFC (nearly all) is neither decoded nor copied.

The quick check flags every code point whose NFC_Quick_Check is not Yes or whose canonical
combining class is not 0, derived from ``unicodedata`` itself so the fast path and the slow
path (``unicodedata.normalize``) use one Unicode version. A document without a flagged code
point is in NFC (UAX #15 quick check); a flagged one is also where a stream may not cut:
NFC(a + b) = NFC(a) + NFC(b) when ``b`` starts with a code point that is not flagged.
"""
import unicodedata
from functools import lru_cache

import numpy as np

from corpustok.arrow import Utf8Batch, decode_replacing
from corpustok.kernels.nfc_check import nfc_suspects

__all__ = ["flagged_code_points", "nfc_batch", "NfcStream"]

_HANGUL_VOWELS_TRAILS = (*range(0x1161, 0x1176), *range(0x11A8, 0x11C3))


@lru_cache(maxsize=None)
def flagged_code_points():
    """Bitset (uint8, little bit order, one bit per code point) of the code points NFC may
    change or combine with what precedes them: quick check No (NFC changes the character
    alone), Maybe (the second character of a primary composite, and Hangul vowels and
    trailing consonants) and non-zero combining class."""
    flags = np.zeros(0x110000, bool)
    flags[list(_HANGUL_VOWELS_TRAILS)] = True
    for cp in range(0x300, 0x110000):  # nothing below U+0300 is flagged
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        if unicodedata.combining(c) or unicodedata.normalize("NFC", c) != c:
            flags[cp] = True
        d = unicodedata.decomposition(c)
        if d and d[0] != "<" and d.count(" ") == 1:
            pair = "".join(chr(int(x, 16)) for x in d.split())
            if unicodedata.normalize("NFC", pair) == c:
                flags[ord(pair[1])] = True
    bits = np.packbits(flags, bitorder="little")
    bits.setflags(write=False)
    return bits


def _flagged(c, bits):
    cp = ord(c)
    return bool((bits[cp >> 3] >> (cp & 7)) & 1)


def nfc_batch(batch: Utf8Batch) -> Utf8Batch:
    """``batch`` with every document in NFC. Documents the quick check passes are kept as
    they are and a batch of only such documents is returned as is; the others are decoded
    (invalid UTF-8 with replacement, counted in ``replaced`` as the kernels would count it)
    and normalized."""
    suspect = np.empty(len(batch.offsets) - 1, bool)
    nfc_suspects(batch.data, batch.offsets, flagged_code_points(), suspect)
    todo = np.flatnonzero(suspect)
    if not len(todo):
        return batch
    offs = batch.offsets
    replaced = np.zeros(len(offs) - 1, np.int64) if batch.replaced is None else \
        batch.replaced.copy()
    lengths = np.diff(offs)
    pieces, at = [], int(offs[0])
    for d in todo.tolist():
        a, b = int(offs[d]), int(offs[d + 1])
        raw = batch.data[a:b].tobytes()
        text, bad = decode_replacing(raw)
        norm = unicodedata.normalize("NFC", text)
        if norm != text:
            replaced[d] += bad
            pieces += [batch.data[at:a], norm.encode("utf-8")]  # unchanged runs as views
            lengths[d] = len(pieces[-1])
            at = b
    if not pieces:
        return batch
    pieces.append(batch.data[at:int(offs[-1])])
    data = np.frombuffer(b"".join(pieces) or b"\0", np.uint8)
    offsets = np.zeros(len(offs), np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return Utf8Batch(data, offsets, batch.valid, replaced if replaced.any() else None,
                     batch.binary, batch.well_formed)


class NfcStream:
    """Text pieces -> the NFC of their concatenation, piece by piece: holds back only the
    text from the last code point that is not flagged (a safe cut) to the end."""

    def __init__(self):
        self._pending = ""
        self._bits = flagged_code_points()

    def feed(self, text):
        text = self._pending + text
        cut = len(text)
        while cut > 0 and _flagged(text[cut - 1], self._bits):
            cut -= 1
        cut -= 1  # the last unflagged character may still take marks that follow it
        if cut <= 0:
            self._pending = text
            return ""
        self._pending = text[cut:]
        return unicodedata.normalize("NFC", text[:cut])

    def finish(self):
        text, self._pending = self._pending, ""
        return unicodedata.normalize("NFC", text)
