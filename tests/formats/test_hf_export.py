"""HF tokenizer.json export: HF ``tokenizers`` itself, loading the exported file, gives our ids
and our decoded text (trained tokenizers, the shipped rank file under tiktoken's rule, GPT-2's
files, NFC, random rank files against tiktoken itself), and corpustok reads the file back to
the same ids. The exports of the real modern vocabularies are held to their vendors'
tokenizers in tests/formats/test_modern_vocab_hf.py. Oracles here take GPT-2's split from tiktoken
(conftest.reference_pattern) and byte characters from conftest.gpt2_byte_chars, not from
corpustok."""
import json
import unicodedata

import numpy as np
import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

import corpustok
from tests.conftest import (GPT2_4K_RANKS as RANKS, gpt2_byte_chars, hf_pattern,
                            reference_pattern, TEST_DATA)
from corpustok.bpe.tokenizer import BytePairTokenizer
from corpustok.formats.hf_export import hf_document, save_hf
from corpustok.kernels.bpe.token_table import unmergeable
from tests.pretokenize.test_pretokenize import assigned_texts as texts

SPECIALS = ["<|endoftext|>", "<pad>"]
GPT2_SPLIT = reference_pattern("gpt2")  # tiktoken's r50k_base pattern
BYTE_CHARS = gpt2_byte_chars()


def byte_text(token):
    """A token's bytes as GPT-2's byte characters (HF's and the utf8 substrate's)."""
    return "".join(BYTE_CHARS[b] for b in token)
EXTRA = ["Cafe\u0301 A\u030a DON'T 12345 x//\n\n", "<|endoftext|>hi<pad> <pad>\n",
         "  \t\u00a0 \U0001f600\U0001f44d\U0001f3fd 中文 ǅemo"]


def sample_lines():
    return (TEST_DATA / "bpe_sample.txt").read_text(encoding="utf-8").splitlines(True) + EXTRA


def exported(tok, path):
    """HF's tokenizer of our export, special tokens taken as text (our ``encode``) and the
    one that recognizes them (HF's default, our ``recognize_special=True``)."""
    save_hf(tok, path)
    plain, special = Tokenizer.from_file(str(path)), Tokenizer.from_file(str(path))
    plain.encode_special_tokens = True
    return plain, special


def assert_same(tok, hf, lines):
    plain, special = hf
    ids = tok.encode_batch(lines).to_pylist()
    assert ids == [e.ids for e in plain.encode_batch(lines)]
    assert tok.encode_batch(lines, recognize_special=True).to_pylist() == \
        [e.ids for e in special.encode_batch(lines)]
    assert [tok.decode(x) for x in ids] == plain.decode_batch(ids, skip_special_tokens=False)


def assert_same_text(tok, hf, text):
    plain, special = hf
    ids = tok.encode(text)
    assert ids == plain.encode(text).ids
    assert tok.encode(text, recognize_special=True) == special.encode(text).ids
    assert tok.decode(ids) == plain.decode(ids, skip_special_tokens=False)


with_specials = st.lists(st.one_of(texts, st.sampled_from(SPECIALS)), max_size=4).map("".join)


@pytest.fixture(scope="module", params=["gpt2", "o200k"])
def trained(request, tmp_path_factory):
    tok = BytePairTokenizer.train(sample_lines(), 700, substrate="utf8",
                                  special_tokens=SPECIALS, pretokenizer=request.param)
    return tok, exported(tok, tmp_path_factory.mktemp("hf") / "tokenizer.json")


@pytest.fixture(scope="module")
def rank_file(tmp_path_factory):
    tok = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="cl100k",
                                          special_tokens={"<|endoftext|>": 4000})
    return tok, exported(tok, tmp_path_factory.mktemp("hf") / "tokenizer.json")


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    tok = BytePairTokenizer.from_hf(TEST_DATA / "gpt2" / "vocab.json",
                                    TEST_DATA / "gpt2" / "merges.txt")
    return tok, exported(tok, tmp_path_factory.mktemp("hf") / "tokenizer.json")


def test_trained_equals_hf(trained):
    tok, hf = trained
    assert tok.special_tokens == SPECIALS
    assert_same(tok, hf, sample_lines())


@given(text=with_specials)
@settings(max_examples=150, deadline=None)
def test_trained_random_text_equals_hf(trained, text):
    assert_same_text(*trained, text)


def test_rank_file_equals_hf(rank_file):
    tok, hf = rank_file
    assert tok.merges is None
    assert_same(tok, hf, sample_lines())


@given(text=with_specials)
@settings(max_examples=150, deadline=None)
def test_rank_file_random_text_equals_hf(rank_file, text):
    assert_same_text(*rank_file, text)


@given(words=st.lists(st.text("abc", min_size=2, max_size=6), unique=True, max_size=40),
       text=st.text("abc ", max_size=40))
@settings(max_examples=300, deadline=None)
def test_random_rank_files_equal_tiktoken(words, text):
    # tokens ranked in random order make tiktoken build some of them from splits that only
    # arise in context (ranks 'aaa' < 'aa': 'aaaa' -> aa a a -> aaa a)
    ranks = {bytes([b]): b for b in range(256)}
    for w in words:
        ranks[w.encode()] = len(ranks)
    ref = tiktoken.Encoding("random", pat_str=GPT2_SPLIT, mergeable_ranks=ranks,
                            special_tokens={})
    tok = BytePairTokenizer({byte_text(t): r for t, r in ranks.items()}, None,
                            substrate="utf8", whole_chunks=True)
    hf = Tokenizer.from_str(json.dumps(hf_document(tok)))
    assert hf.encode(text).ids == tok.encode(text) == ref.encode_ordinary(text)


def test_token_merging_cannot_reach_is_emitted_whole():
    """'abcd' splits only into (ab, cd), but merging its bytes takes (b, c) first and stops at
    a bc d. tiktoken emits a chunk that is a token whole; so do we, and it is the one token
    the whole-chunk lookup table holds (merging reaches every other)."""
    ranks = {bytes([b]): b for b in range(256)}
    for w in (b"bc", b"ab", b"cd", b"abcd"):
        ranks[w] = len(ranks)
    ref = tiktoken.Encoding("unreachable", pat_str=GPT2_SPLIT, mergeable_ranks=ranks,
                            special_tokens={})
    tok = BytePairTokenizer({byte_text(t): r for t, r in ranks.items()}, None,
                            substrate="utf8", whole_chunks=True)
    hard = unmergeable(tok._tok_sym, tok._tok_off, tok._exists, tok._sym_id, tok._pairs)
    assert np.flatnonzero(hard).tolist() == [ranks[b"abcd"]]
    for text in ("abcd", " abcd abcdabcd abc bcd", "ab cd"):
        assert tok.encode(text) == ref.encode_ordinary(text)
    assert tok.encode("abcd") == [ranks[b"abcd"]]


def test_gpt2_files_equal_hf(gpt2):
    tok, hf = gpt2
    assert tok.special_tokens == ["<|endoftext|>"]
    assert_same(tok, hf, sample_lines())


@given(text=with_specials)
@settings(max_examples=100, deadline=None)
def test_gpt2_files_random_text_equal_hf(gpt2, text):
    assert_same_text(*gpt2, text)


def test_document_shape(rank_file, gpt2):
    doc = hf_document(rank_file[0])
    assert doc["model"]["ignore_merges"] is True and doc["normalizer"] is None
    assert doc["pre_tokenizer"]["pretokenizers"][0]["pattern"] == {"Regex": hf_pattern("cl100k")}
    assert doc["added_tokens"] == [{"id": 4000, "content": "<|endoftext|>",
                                    "single_word": False, "lstrip": False, "rstrip": False,
                                    "normalized": False, "special": True}]
    g = hf_document(gpt2[0])
    assert g["pre_tokenizer"] == {"type": "ByteLevel", "add_prefix_space": False,
                                  "trim_offsets": True, "use_regex": True}
    assert g["model"]["ignore_merges"] is False
    assert g["model"]["merges"][0] == ["Ġ", "t"]  # GPT-2's first merge, as in merges.txt


def test_nfc_round_trip(tmp_path):
    tok = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="qwen2", normalize="NFC")
    hf = exported(tok, tmp_path / "tokenizer.json")
    assert json.loads((tmp_path / "tokenizer.json").read_text())["normalizer"] == \
        {"type": "NFC"}
    decomposed = ["Cafe\u0301 A\u030a x", "e\u0301\u0301 \u1100\u1161\u11a8 Å"]
    assert_same(tok, hf, sample_lines() + decomposed)
    plain = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="qwen2")
    assert hf[0].encode(decomposed[0]).ids == \
        plain.encode(unicodedata.normalize("NFC", decomposed[0]))
    back = BytePairTokenizer.from_hf(tmp_path / "tokenizer.json")
    assert back.to_dict()["normalize"] == "NFC"
    assert back.encode_batch(decomposed).to_pylist() == tok.encode_batch(decomposed).to_pylist()


def test_corpustok_reads_the_export_back(trained, rank_file, gpt2, tmp_path):
    lines = sample_lines()
    for k, (tok, _) in enumerate([trained, rank_file, gpt2]):
        path = tmp_path / f"tokenizer{k}.json"
        save_hf(tok, path)
        back = BytePairTokenizer.from_hf(path)
        d, b = tok.to_dict(), back.to_dict()
        assert (b["vocab"], b["special_tokens"], b["pre_tokenizer"], b.get("whole_chunks")) \
            == (d["vocab"], d["special_tokens"], d["pre_tokenizer"], d.get("whole_chunks"))
        assert back.encode_batch(lines).to_pylist() == tok.encode_batch(lines).to_pylist()
        assert back.encode_batch(lines, recognize_special=True).to_pylist() == \
            tok.encode_batch(lines, recognize_special=True).to_pylist()


@pytest.mark.parametrize("substrate, why", [("ube", "second 256-symbol alphabet"),
                                            ("utf16", "UTF-16LE bytes of the text's code")])
def test_other_substrates_are_refused(substrate, why):
    tok = BytePairTokenizer.train(["hello world"] * 3, 300, substrate=substrate)
    with pytest.raises(ValueError, match=f"{substrate}' substrate cannot .*{why}"):
        hf_document(tok)
    wordpiece = corpustok.load(TEST_DATA / "bert-base-uncased" / "vocab.txt")
    with pytest.raises(ValueError, match="not a 'wordpiece' tokenizer"):
        hf_document(wordpiece)


@pytest.mark.readers
def test_transformers_loads_the_export(rank_file, tmp_path):
    import transformers
    tok, _ = rank_file
    path = tmp_path / "tokenizer.json"
    save_hf(tok, path)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))
    lines = sample_lines()
    assert [fast.encode(t, add_special_tokens=False) for t in lines] == \
        tok.encode_batch(lines, recognize_special=True).to_pylist()
    assert fast.convert_tokens_to_ids("<|endoftext|>") == 4000
