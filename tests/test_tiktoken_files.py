"""tiktoken rank files and Tekken files: loaded ids equal tiktoken's ``encode_ordinary``.

A 4,000-token rank file in ``tests/data`` covers the loader and every named pattern without
the shared data; the modern vocabularies of ``../shared/data/vocab/modern`` (skipped when
absent) are checked against tiktoken with their own patterns."""
import base64
import json
import unicodedata

import numpy as np
import pytest
import tiktoken
import tiktoken.load
from hypothesis import given, settings
from hypothesis import strategies as st

import corpustok
from conftest import SHARED_DATA, TEST_DATA, read_xz_text, shared_corpus_files
from corpustok.bpe import BytePairTokenizer
from corpustok.pretokenize import PATTERNS
from test_pretokenize import texts

RANKS = TEST_DATA / "gpt2_4k.tiktoken"
MODERN = SHARED_DATA / "vocab" / "modern"
KNOWN = {"cl100k_base": "cl100k", "o200k_base": "o200k", "llama3": "cl100k",
         "llama4": "o200k", "qwen2": "qwen2", "qwen3_5": "qwen3_5"}


def oracle(path, pattern, specials=None):
    return tiktoken.Encoding(path.stem, pat_str=pattern, special_tokens=specials or {},
                             mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(path)))


@pytest.fixture(scope="module", params=list(PATTERNS))
def small(request):
    name = request.param
    return (BytePairTokenizer.from_tiktoken(RANKS, pretokenizer=name),
            oracle(RANKS, PATTERNS[name]))


def sample_lines():
    return (TEST_DATA / "bpe_sample.txt").read_text(encoding="utf-8").splitlines(True)


def test_small_rank_file_equals_tiktoken(small):
    ours, ref = small
    lines = sample_lines()
    assert ours.encode_batch(lines).to_pylist() == [ref.encode_ordinary(t) for t in lines]


@given(text=texts)
@settings(max_examples=150, deadline=None)
def test_small_rank_file_random_text(small, text):
    ours, ref = small
    assert ours.encode(text) == ref.encode_ordinary(text)
    assert ours.decode(ours.encode(text)) == text.encode("utf-8", "replace").decode()


@given(text=texts, cuts=st.lists(st.integers(0, 40), max_size=4))
@settings(max_examples=100, deadline=None)
def test_small_rank_file_stream_equals_whole(small, text, cuts):
    ours, _ = small
    enc = ours.stream()
    got, at = [], 0
    for c in sorted(cuts):
        got += enc.feed(text[at:c])
        at = max(at, c)
    got += enc.feed(text[at:]) + enc.finish()
    assert got == ours.encode(text)


def test_unknown_rank_file_needs_a_pretokenizer():
    with pytest.raises(ValueError, match="pretokenizer=NAME"):
        corpustok.load(RANKS)


def test_rank_file_save_load_and_specials(tmp_path):
    tok = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="o200k",
                                          special_tokens={"<|endoftext|>": 4000})
    path = tmp_path / "tok.json"
    tok.save(path)
    back = corpustok.load(path)
    text = "Hello<|endoftext|> world's 12345 DON'T"
    ref = oracle(RANKS, PATTERNS["o200k"], {"<|endoftext|>": 4000})
    for t in (tok, back):
        assert t.encode(text) == ref.encode_ordinary(text)
        assert t.encode(text, recognize_special=True) == ref.encode(text, allowed_special="all")
        assert t.pretokenizer == "o200k" and t.merges is None
    assert json.loads(path.read_text())["merges"] is None


def test_bad_rank_files(tmp_path):
    bad = tmp_path / "bad.tiktoken"
    bad.write_bytes(b"IQ== 0\nnot-base64! 1\n")
    with pytest.raises(ValueError, match="line 2 is not 'base64 rank'"):
        BytePairTokenizer.from_tiktoken(bad, pretokenizer="gpt2")
    bad.write_bytes(b"IQ== 0\nIQ== 1\n")
    with pytest.raises(ValueError, match="repeated token"):
        BytePairTokenizer.from_tiktoken(bad, pretokenizer="gpt2")
    with pytest.raises(ValueError, match="unknown pre-tokenizer"):
        BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="gpt5")


def test_nfc_normalization():
    tok = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="qwen2", normalize="NFC")
    plain = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="qwen2")
    decomposed = "Cafe\u0301 A\u030a x"
    assert tok.encode(decomposed) == plain.encode(unicodedata.normalize("NFC", decomposed))
    assert tok.encode_batch([decomposed, None, "plain"]).to_pylist() == \
        [plain.encode(unicodedata.normalize("NFC", decomposed)), None, plain.encode("plain")]
    with pytest.raises(ValueError, match="NFC"):
        tok.stream()


def test_tiktoken_rule_is_not_hf_merges_order():
    # tiktoken merges any pair whose concatenation is a token, by the token's rank
    tok = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="gpt2")
    ref = oracle(RANKS, PATTERNS["gpt2"])
    words = [w for w in (TEST_DATA / "bpe_sample.txt").read_text().split()][:2000]
    assert [tok.encode(" " + w) for w in words] == [ref.encode_ordinary(" " + w) for w in words]


# ---- the modern vocabularies (shared data) ---------------------------------------------------

def corpus_sample(every=20):
    lines = []
    for path in shared_corpus_files():
        lines += read_xz_text(path, max_bytes=2_000_000).splitlines(True)[::every]
    return lines


@pytest.mark.parametrize("name", list(KNOWN))
def test_modern_rank_files_equal_tiktoken(shared_data, name):
    path = MODERN / f"{name}.tiktoken"
    tok = corpustok.load(path)
    ref = oracle(path, PATTERNS[KNOWN[name]])
    lines = corpus_sample()
    if name.startswith("qwen"):  # Qwen's own tokenizer normalizes before tiktoken
        ref_lines = [unicodedata.normalize("NFC", t) for t in lines]
    else:
        ref_lines = lines
    got = tok.encode_batch(lines).to_pylist()
    want = [ref.encode_ordinary(t) for t in ref_lines]
    bad = [k for k in range(len(lines)) if got[k] != want[k]]
    assert not bad, f"{len(bad)} of {len(lines)} lines differ, first {lines[bad[0]][:80]!r}"
    assert tok.pretokenizer == KNOWN[name]


def test_modern_special_tokens(shared_data):
    llama3 = corpustok.load(MODERN / "llama3.tiktoken")
    assert llama3.token_to_id("<|begin_of_text|>") == 128000
    assert llama3.token_to_id("<|eot_id|>") == 128009
    assert len(llama3.special_tokens) == 256
    cl = corpustok.load(MODERN / "cl100k_base.tiktoken")
    assert cl.encode("a<|endoftext|>", recognize_special=True)[-1] == 100257
    assert cl.token_to_id("<|endofprompt|>") == 100276
    qwen = corpustok.load(MODERN / "qwen2.tiktoken")
    assert qwen.token_to_id("<|im_start|>") == 151644


def test_tekken_equals_tiktoken(shared_data):
    path = MODERN / "tekken_240911.json"
    doc = json.loads(path.read_text())
    n_special = doc["config"]["default_num_special_tokens"]
    used = doc["config"]["default_vocab_size"] - n_special
    ranks = {base64.b64decode(e["token_bytes"]): e["rank"] for e in doc["vocab"][:used]}
    ref = tiktoken.Encoding("tekken", pat_str=doc["config"]["pattern"], mergeable_ranks=ranks,
                            special_tokens={})
    tok = corpustok.load(path)
    assert tok.pretokenizer == "tekken"
    assert tok.token_to_id("[INST]") == 3 and tok.token_to_id("<SPECIAL_999>") == 999
    lines = corpus_sample(every=40)
    got = tok.encode_batch(lines).to_pylist()
    assert [list(np.array(g) - n_special) for g in got] == [ref.encode_ordinary(t)
                                                             for t in lines]


# ---- the same tokenizers as HF tokenizer.json (Split + ByteLevel, ignore_merges) -------------

def hf_json_from_ranks(path, pattern, nfc=False):
    """An HF tokenizer.json built from a rank file with the standard rank -> merges
    conversion (each token's last merge as tiktoken's BPE would make it), as distributed
    beside Llama 3 / Qwen weights."""
    from corpustok.tiktoken_files import token_string

    ranks = tiktoken.load.load_tiktoken_bpe(str(path))

    def last_merge(token, rank):
        parts = [bytes([b]) for b in token]
        while len(parts) > 2:
            best = min(((ranks.get(a + b, 1 << 62), k) for k, (a, b) in
                        enumerate(zip(parts, parts[1:]))))
            if best[0] >= rank:
                break
            k = best[1]
            parts[k:k + 2] = [parts[k] + parts[k + 1]]
        return parts

    merges = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) > 1:
            a, b = last_merge(token, rank)
            merges.append(f"{token_string(a)} {token_string(b)}")
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": {"type": "NFC"} if nfc else None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": {token_string(t): r for t, r in ranks.items()},
                  "merges": merges}})


@pytest.mark.parametrize("name", ["cl100k", "o200k", "qwen2"])
def test_hf_split_tokenizer_json_equals_hf(tmp_path, name):
    from tokenizers import Tokenizer

    doc = hf_json_from_ranks(RANKS, PATTERNS[name], nfc=name == "qwen2")
    path = tmp_path / "tokenizer.json"
    path.write_text(doc, encoding="utf-8")
    hf = Tokenizer.from_str(doc)
    ours = corpustok.load(path)
    assert ours.pretokenizer == name
    lines = sample_lines() + ["Cafe\u0301 DON'T 12345 x//\n\n"]
    assert ours.encode_batch(lines).to_pylist() == [e.ids for e in hf.encode_batch(lines)]


def test_hf_unsupported_pre_tokenizer_is_named(tmp_path):
    doc = json.loads(hf_json_from_ranks(RANKS, PATTERNS["cl100k"]))
    doc["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match="pre_tokenizer .* is not supported; expected"):
        corpustok.load(path)
