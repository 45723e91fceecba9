"""The substrate codec: text <-> the base symbols byte-level BPE runs on.

Three substrates share one symbol space of 512 ids:

- ``utf8``  (GPT-2 byte-level BPE): every UTF-8 byte is a symbol, ids 0..255.
- ``utf16`` (BBPE16): every UTF-16LE byte is a symbol, ids 0..255.
- ``ube``   (Universal Byte-Level Encoding): characters whose UTF-8 form has 1-2 bytes keep
  their UTF-8 bytes (ids 0..255); characters of 3-4 UTF-8 bytes are written as UTF-16LE bytes
  (2 for the BMP, 4 for a surrogate pair) in a second alphabet, ids 256..511.

For interchange with HF-style vocabularies each symbol has a one-character string: byte ``b``
of the first alphabet is GPT-2's ``bytes_to_unicode`` character, byte ``b`` of the second is
``chr(0xE100 + b)``. Decoding keeps a UTF-8 and a UTF-16LE buffer and flushes one when a symbol
of the other alphabet arrives, so decoding is lossless for every valid input and follows
Python's ``errors="replace"`` for every malformed symbol sequence.
"""
import codecs
import logging
from functools import lru_cache

import numpy as np

from corpustok.arrow import id_array, id_lists, list_array, string_array, utf8_batch
from corpustok.kernels.substrate import (SECOND, UBE, UTF8, UTF16, decode_symbols,
                                               encode_symbols)

SUBSTRATES = {"utf8": UTF8, "utf16": UTF16, "ube": UBE}
DEVICES = ("cpu", "cuda", "auto")
log = logging.getLogger(__name__)
PUA_BASE = 0xE100  # second-alphabet byte b is the symbol string chr(PUA_BASE + b)

__all__ = ["SUBSTRATES", "SYMBOL_STRINGS", "bytes_to_unicode", "alphabet", "substrate_code",
           "to_symbols", "from_symbols", "parse_symbols", "symbols_batch", "from_symbols_batch",
           "StreamDecoder"]


def bytes_to_unicode():
    """GPT-2's byte -> printable character table (byte order): the 188 printable Latin-1
    bytes map to themselves, the other 68 to U+0100.. in byte order."""
    keep = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {b: chr(b) for b in keep}
    shifted = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(0x100 + shifted)
            shifted += 1
    return [table[b] for b in range(256)]


SYMBOL_STRINGS = bytes_to_unicode() + [chr(PUA_BASE + b) for b in range(256)]
_SYMBOL_CPS = np.array([ord(s) for s in SYMBOL_STRINGS], dtype=np.uint32)


@lru_cache(maxsize=None)
def _cp_to_symbol():
    """Code point -> symbol id (-1 where the code point is no symbol), for parsing strings."""
    table = np.full(PUA_BASE + 256, -1, np.int32)
    table[_SYMBOL_CPS] = np.arange(512, dtype=np.int32)
    return table


def substrate_code(substrate):
    """Kernel code of a substrate name; ValueError naming the valid ones otherwise."""
    try:
        return SUBSTRATES[substrate]
    except (KeyError, TypeError):
        raise ValueError(f"unknown substrate {substrate!r}; expected one of "
                         f"{', '.join(SUBSTRATES)}") from None


def alphabet(substrate="ube"):
    """The substrate's symbol strings in symbol-id order (256, or 512 for ``ube``)."""
    return SYMBOL_STRINGS[: 512 if substrate_code(substrate) == UBE else 256]


def _symbols_to_str(ids):
    return _SYMBOL_CPS[ids].astype("<u4").tobytes().decode("utf-32-le")


def parse_symbols(symbols, substrate="ube"):
    """Symbol ids (uint16) of a symbol string; ValueError at the first foreign character."""
    if not isinstance(symbols, str):
        raise TypeError(f"symbols must be a str, got {type(symbols).__name__}")
    limit = len(_SYMBOL_CPS) if substrate_code(substrate) == UBE else SECOND
    table = np.append(_cp_to_symbol(), np.int32(-1))  # the last: every code point above
    out = np.empty(len(symbols), np.uint16)
    step = 1 << 20  # code points per pass: temporaries stay small for a whole vocabulary
    for start in range(0, len(symbols), step):
        cps = np.frombuffer(symbols[start:start + step].encode("utf-32-le", "surrogatepass"),
                            np.uint32)
        ids = table[np.minimum(cps, len(table) - 1)].view(np.uint32)  # -1: 2**32 - 1
        if ids.max() >= limit:
            i = start + int(np.flatnonzero(ids >= limit)[0])
            raise ValueError(f"symbols[{i}] = {symbols[i]!r} (U+{ord(symbols[i]):04X}) is not "
                             f"a symbol of the {substrate!r} substrate; symbol strings come "
                             "from to_symbols() or a vocabulary of this substrate")
        out[start:start + len(ids)] = ids
    return out


def to_symbols(text, substrate="ube"):
    """The symbol string of ``text``: one character per base symbol.

    >>> [hex(ord(c)) for c in to_symbols("GPU性能")]
    ['0x47', '0x50', '0x55', '0xe127', '0xe160', '0xe1fd', '0xe180']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    batch = utf8_batch([text])
    if batch.replaced is not None:
        i = next(k for k, ch in enumerate(text) if 0xD800 <= ord(ch) <= 0xDFFF)
        raise ValueError(f"text[{i}] is a lone surrogate U+{ord(text[i]):04X}, which no "
                         "Unicode encoding can carry; symbols_batch() replaces lone surrogates "
                         "with U+FFFD and counts them")
    symbols, _, _ = encode_symbols(batch.data, batch.offsets, substrate_code(substrate))
    return _symbols_to_str(symbols)


def _decode(symbols, offsets, code):
    out = np.empty(3 * len(symbols), np.uint8)
    out_offsets = np.empty(len(offsets), np.int64)
    replaced = np.empty(len(offsets) - 1, np.int64)
    n = decode_symbols(symbols, offsets, code, out, out_offsets, replaced)
    return out[:n], out_offsets, replaced


def from_symbols(symbols, substrate="ube"):
    """Text of a symbol string; malformed symbol sequences give U+FFFD as Python's
    ``errors="replace"`` would (a truncated UTF-8 character, an odd UTF-16 byte, a lone
    surrogate)."""
    ids = parse_symbols(symbols, substrate)
    data, _, _ = _decode(ids, np.array([0, len(ids)], np.int64), substrate_code(substrate))
    return data.tobytes().decode("utf-8")


def _encoder(device):
    """The batch symbol encoder for ``device``: the CPU kernel or its CUDA twin."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; expected one of {', '.join(DEVICES)}")
    if device == "cpu":
        return encode_symbols
    from corpustok.kernels import cuda  # here: numba.cuda only for device='cuda'

    if cuda.cuda_available():
        return cuda.encode_symbols_cuda
    if device == "cuda":
        raise RuntimeError("device='cuda' but no CUDA GPU is available (install the cuda "
                           "extra: pip install 'corpustok[cuda]', and check the driver), or "
                           "use device='auto' to fall back to the CPU")
    log.info("no CUDA GPU: using the CPU kernel")
    return encode_symbols


def symbols_batch(texts, substrate="ube", *, return_replaced=False, device="cpu"):
    """Symbol ids of a batch in one kernel call: a ``pyarrow.ListArray`` of uint16.

    ``texts``: a pyarrow string/large_string/binary array (chunked or not) or a list of
    ``str``/None. Nulls give null lists. Invalid UTF-8 in a binary array is read as
    ``bytes.decode("utf-8", "replace")`` reads it, and lone surrogates in ``str`` input become
    U+FFFD; with ``return_replaced=True`` the per-document count of those replacements is
    returned too, as ``(lists, counts)``. ``device="cuda"`` runs the CUDA twin of the kernel
    (identical output; an error without a GPU), ``"auto"`` uses it when a GPU is present.
    """
    code = substrate_code(substrate)
    encode = _encoder(device)
    batch = utf8_batch(texts)
    symbols, offsets, replaced = encode(batch.data, batch.offsets, code)
    lists = list_array(offsets, symbols, batch.valid)
    if not return_replaced:
        return lists
    if batch.replaced is not None:
        replaced += batch.replaced
    return lists, replaced


def from_symbols_batch(lists, substrate="ube", *, return_replaced=False):
    """Texts of a batch of symbol-id lists (the output of :func:`symbols_batch`) in one kernel
    call, as a ``pyarrow.LargeStringArray``; with ``return_replaced=True`` also the
    per-document count of U+FFFD made for malformed sequences."""
    code = substrate_code(substrate)
    flat, offsets, valid = id_lists(lists)
    limit = 512 if code == UBE else 256
    if len(flat) and (int(flat.max()) >= limit or int(flat.min()) < 0):
        bad = int(flat[(flat >= limit) | (flat < 0)][0])
        raise ValueError(f"symbol id {bad} is outside the {substrate!r} alphabet "
                         f"(0..{limit - 1})")
    flat = flat.astype(np.uint16)
    data, out_offsets, replaced = _decode(flat, offsets, code)
    texts = string_array(out_offsets, data, valid)
    return (texts, replaced) if return_replaced else texts


class StreamDecoder:
    """Incremental symbols -> text with constant work per symbol (no re-decoding of a prefix).

    Keeps one incremental UTF-8 and one UTF-16LE decoder (``errors="replace"``); a symbol of
    the other alphabet ends the current buffer first (flush on switch). For every way of
    cutting a symbol sequence into ``feed`` calls, the concatenated output equals
    :func:`from_symbols` of the whole sequence.
    """

    def __init__(self, substrate="ube"):
        self._code = substrate_code(substrate)
        self._limit = 512 if self._code == UBE else 256
        utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        utf16 = codecs.getincrementaldecoder("utf-16-le")("replace")
        self._decoders = (utf16, utf16) if self._code == UTF16 else (utf8, utf16)
        self._second = False  # alphabet of the pending bytes

    def feed(self, symbols):
        """Decode more symbol ids; returns the text that is complete so far."""
        ids = id_array(symbols)
        if len(ids) and (ids.min() < 0 or ids.max() >= self._limit):
            raise ValueError(f"symbol ids must lie in 0..{self._limit - 1}")
        out = []
        second = ids >= SECOND
        cuts = np.flatnonzero(second[1:] != second[:-1]) + 1
        start = 0
        for stop in [*cuts.tolist(), len(ids)]:
            if stop == start:
                continue
            run_second = bool(second[start])
            if run_second != self._second:
                out.append(self._decoders[self._second].decode(b"", True))
                self._second = run_second
            out.append(self._decoders[run_second].decode((ids[start:stop] & 0xFF)
                                                         .astype(np.uint8).tobytes()))
            start = stop
        return "".join(out)

    def flush(self):
        """End both buffers (as at a special token or the end of a text); returns the rest."""
        text = self._decoders[0].decode(b"", True) + self._decoders[1].decode(b"", True)
        self._second = False
        return text

    finish = flush
