"""A protocol test double for the pipeline tests: a "tokenizer" whose ids are the UBE base
symbols of the substrate codec (no merges), so the pipeline can be tested on its own.

Its correctness is checked here against Python's codecs (the reference for the substrate:
UTF-8 bytes of 1-2 byte characters, UTF-16LE bytes + 256 otherwise).
"""
import numpy as np
import pyarrow as pa

from corpustok._arrow import list_array, utf8_batch
from corpustok.kernels import ube


class SymbolTokenizer:
    """Ids = UBE base symbols (0..511); implements the common tokenizer protocol."""

    vocab_size = 514  # 512 symbols, then two spare ids usable as BOS/EOS

    def encode_arrays(self, batch):
        sym, off, rep = ube.encode_symbols(batch.data, batch.offsets, ube.UBE)
        if batch.replaced is not None:
            rep = rep + batch.replaced
        return sym.astype(np.int32), off, rep

    def encode_batch(self, texts):
        b = utf8_batch(texts)
        ids, off, _ = self.encode_arrays(b)
        return list_array(off, ids, b.valid)

    def encode(self, text):
        return self.encode_batch([text])[0].as_py()

    def decode_batch(self, lists):
        lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
        sym = lists.values.to_numpy(zero_copy_only=False).astype(np.uint16)
        off = np.asarray(lists.offsets, np.int64) - lists.offsets[0].as_py()
        out = np.empty(3 * len(sym) + 1, np.uint8)
        out_off = np.empty(len(off), np.int64)
        rep = np.empty(len(off) - 1, np.int64)
        ube.decode_symbols(sym, off, ube.UBE, out, out_off, rep)
        return [out[out_off[i]:out_off[i + 1]].tobytes().decode("utf-8")
                for i in range(len(off) - 1)]

    def decode(self, ids):
        return self.decode_batch(pa.array([list(ids)], pa.list_(pa.int32())))[0]

    def stream(self):
        tok = self

        class _Stream:
            def feed(self, text):
                return tok.encode(text)

            def finish(self):
                return []
        return _Stream()

    def to_dict(self):
        return {"format": "corpustok-test", "type": "symbols"}


def reference_symbols(text):
    """UBE symbols from Python's codecs (the test reference)."""
    out = []
    for ch in text:
        b = ch.encode("utf-8", "surrogatepass")
        if len(b) <= 2:
            out.extend(b)
        else:
            out.extend(256 + x for x in ch.encode("utf-16-le", "surrogatepass"))
    return out


def test_double_matches_codec_reference():
    texts = ["hello", "Grüße, мир", "日本語 😀", ""]
    tok = SymbolTokenizer()
    assert [tok.encode(t) for t in texts] == [reference_symbols(t) for t in texts]
    assert tok.decode_batch(tok.encode_batch(texts)) == texts
