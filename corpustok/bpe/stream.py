"""Incremental BPE: an encoder fed text in pieces that gives the ids of a whole-text encode,
and a decoder fed ids that gives text as soon as it is complete (see
:meth:`BytePairTokenizer.stream` and :meth:`BytePairTokenizer.decode_stream`)."""
import numpy as np

from corpustok.arrow import read_only, utf8_batch
from corpustok.kernels.bpe.decode import expand_ids
from corpustok.substrate import StreamDecoder


class BpeStreamEncoder:
    """Holds back only the text whose chunks may still change: the last chunk plus the
    pre-tokenizer's lookahead, and a tail that could begin a special token.

    When a feed completes no chunk (one chunk longer than the text fed so far), the next
    encoding attempt waits until the pending text has doubled, so a single huge chunk fed in
    small pieces costs O(n) in total instead of O(n^2); the ids come out later, never
    different.
    """

    def __init__(self, tok, recognize_special):
        self._tok = tok
        self._recognize = recognize_special and bool(tok._sp_bytes)
        self._pieces = []
        self._size = 0
        self._wait = 0  # pending bytes needed before the next attempt

    def _held_from(self, data):
        """Earliest position where a special token might begin but is cut off by the end."""
        held = len(data)
        if self._recognize:
            for sp in self._tok._sp_bytes:
                for k in range(1, len(sp)):
                    if len(data) - k < held and data.endswith(sp[:k]):
                        held = len(data) - k
        return held

    def _take(self):
        data = b"".join(self._pieces)
        self._pieces, self._size = [], 0
        return data

    def feed(self, text):
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        batch = utf8_batch([text])
        self._pieces.append(batch.data[batch.offsets[0]:batch.offsets[1]].tobytes())
        self._size += len(self._pieces[-1])
        if self._size < self._wait:
            return []
        data = self._take()
        held = self._held_from(data)
        ids, _, _, stop = self._tok._encode(np.frombuffer(data or b"\0", np.uint8),
                                            np.array([0, held], np.int64),
                                            self._recognize, False, True)
        rest = data[stop:]
        self._pieces, self._size = [rest], len(rest)
        self._wait = 2 * len(rest) if stop == 0 else 0
        return ids.tolist()

    def finish(self):
        data = self._take()
        self._wait = 0
        ids, _, _, _ = self._tok._encode(np.frombuffer(data or b"\0", np.uint8),
                                         np.array([0, len(data)], np.int64),
                                         self._recognize, True, True)
        return ids.tolist()


class NormalizingEncoder:
    """NFC before an incremental encoder: each piece's stable part (:class:`corpustok.nfc.
    NfcStream`) goes on, so the ids are those of the NFC of the whole text."""

    def __init__(self, nfc, inner):
        self._nfc = nfc
        self._inner = inner

    def feed(self, text):
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self._inner.feed(self._nfc.feed(text))

    def finish(self):
        return self._inner.feed(self._nfc.finish()) + self._inner.finish()


class BpeStreamDecoder:
    """Ids -> text through :class:`corpustok.substrate.StreamDecoder`; a special token ends both
    byte buffers, then its text follows."""

    def __init__(self, tok):
        self._tok = tok
        self._dec = StreamDecoder(tok.substrate)

    def feed(self, ids):
        tok = self._tok
        ids = tok._decodable.array([ids] if np.isscalar(ids) else ids)
        tok._decodable.check(ids)
        symbols, seg_off = expand_ids(read_only(ids), np.array([0, len(ids)], np.int64),
                                      tok._tok_sym, tok._tok_off, tok._is_special)
        out = [self._dec.feed(symbols[seg_off[0]:seg_off[1]])]
        for g, t in enumerate(ids[tok._is_special[ids]].tolist(), 1):
            out.append(self._dec.flush())
            out.append(tok._id_to_tok[t])
            out.append(self._dec.feed(symbols[seg_off[g]:seg_off[g + 1]]))
        return "".join(out)

    def finish(self):
        return self._dec.finish()
