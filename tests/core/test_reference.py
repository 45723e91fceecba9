"""corpustok.reference against the external references (Python's codecs, ``regex``, tiktoken,
HF ``tokenizers``) and against our kernels, so that kernel tests may compare with it.

The reference classes characters with the running Python's ``unicodedata``; ``regex`` and HF
carry other Unicode versions, so text strategies keep to code points both sides know:
assigned ones for GPT-2 (``regex``, tiktoken) and, for BERT (whose HF tables date from 2016),
those with the same category in Unicode 3.2 (``unicodedata.ucd_3_2_0``) as today.
"""
import codecs
import unicodedata

import pyarrow as pa
import pytest
import regex
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.conftest import GPT2, hf_bpe_train, TEST_DATA, tiktoken_gpt2
from corpustok import reference as R
from corpustok import substrate as ube
from corpustok.bpe.train import count_chunks, train_from_counts
from corpustok.pipeline.jobs.demo import load_sample
from corpustok.pretokenize.patterns import GPT2_PATTERN
from tests.pretokenize.test_pretokenize import EDGE
from tests.wordpiece.test_wordpiece import CONFIGS, EDGE_CASES, HF_JSON, MIXED, hf, vocab_dict

PAT = regex.compile(GPT2_PATTERN)
SCALARS = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
ASSIGNED = [c for c in SCALARS if unicodedata.category(c) != "Cn"]
STABLE = [c for c in ASSIGNED if unicodedata.ucd_3_2_0.category(c) == unicodedata.category(c)]
gpt2_text = st.lists(st.sampled_from(EDGE) | st.characters(exclude_categories=("Cs", "Cn")),
                     max_size=40).map("".join)


# --- 1. substrate codec ------------------------------------------------------------------
def test_symbol_tables_equal_ube():
    assert R.bytes_to_unicode() == ube.bytes_to_unicode()
    assert R.SYMBOL_STRINGS == ube.SYMBOL_STRINGS


def test_issue_vector():
    assert R.symbol_ids("GPU性能") == [0x47, 0x50, 0x55, 0x127, 0x160, 0x1FD, 0x180]


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec="utf-8") | st.sampled_from("aé߿ࠀ性😀\U0010ffff"),
               max_size=40))
def test_codec_equals_python_codecs_and_kernel(text):
    assert R.symbol_ids(text, "utf8") == list(text.encode("utf-8"))
    assert R.symbol_ids(text, "utf16") == list(text.encode("utf-16-le"))
    ids = R.symbol_ids(text, "ube")  # 1-2 byte characters as UTF-8, the rest as UTF-16LE
    assert bytes(i for i in ids if i < 256) == \
        "".join(c for c in text if ord(c) < 0x800).encode("utf-8")
    assert bytes(i - 256 for i in ids if i >= 256) == \
        "".join(c for c in text if ord(c) >= 0x800).encode("utf-16-le")
    for substrate in R.SUBSTRATES:
        ids = R.symbol_ids(text, substrate)
        assert ube.symbols_batch([text], substrate).to_pylist() == [ids]
        assert R.decode_symbols(ids, substrate) == text
        assert R.symbol_string(ids) == ube.to_symbols(text, substrate)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 511), max_size=40), st.sampled_from(R.SUBSTRATES))
@example([0xE4, 0xBD, 256 + 0x27, 256 + 0x60, 0x41, 256 + 0x3D, 256 + 0xD8], "ube")
def test_decode_of_any_symbols_equals_kernel(ids, substrate):
    if substrate != "ube":
        ids = [i & 0xFF for i in ids]
    assert R.decode_symbols(ids, substrate) == \
        ube.from_symbols_batch([ids], substrate).to_pylist()[0]


def replacements_made(raw):
    """How often ``raw.decode("utf-8", "replace")`` calls its error handler."""
    calls = []

    def count(exc):
        calls.append(exc.start)
        return "\ufffd", exc.end

    codecs.register_error("test-reference-count", count)
    raw.decode("utf-8", "test-reference-count")
    return len(calls)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=20), max_size=5), st.sampled_from(R.SUBSTRATES))
@example([b"ab\xff\xef\xbf\xbd\xe2\x82", b"", b"\xed\xa0\x80\xf0\x9f\x98"], "ube")
def test_invalid_utf8_batch_equals_codec_and_kernel(docs, substrate):
    symbols, offsets, counts = R.encode_symbols(docs, substrate)
    assert counts == [replacements_made(raw) for raw in docs]
    lists, replaced = ube.symbols_batch(pa.array(docs, pa.binary()), substrate,
                                        return_replaced=True)
    assert lists.to_pylist() == [symbols[a:b] for a, b in zip(offsets, offsets[1:])]
    assert replaced.tolist() == counts


# --- 2. GPT-2 pre-tokenization ---------------------------------------------------------------
def test_char_classes_equal_regex_on_every_code_point():
    """The classes ``regex`` gives every code point, read from one string of them all."""
    everything = "".join(map(chr, range(0x110000)))
    want = {}
    for cls, pattern in (("L", r"\p{L}+"), ("N", r"\p{N}+"), ("S", r"\s+")):
        for m in regex.finditer(pattern, everything):
            want.update(dict.fromkeys(range(m.start(), m.end()), cls))
    assert {cp for cp, cls in want.items() if cls == "S"} == set(map(ord, R.WHITE_SPACE))
    bad = [c for c in ASSIGNED if R.char_class(c) != want.get(ord(c), "O")]
    assert not bad, [f"U+{ord(c):04X}" for c in bad[:10]]


def test_split_equals_regex_on_every_assigned_code_point():
    text = "".join(f" {c}{c}a" for c in ASSIGNED)
    assert R.gpt2_split(text) == PAT.findall(text)


@settings(max_examples=1000, deadline=None)
@given(gpt2_text)
@example("they're 've 'll 'd 'm 's 't 'S 'Re ''s")
@example("a  b\n\n c\r\n d \t e\u00a0 f\u3000g   ")
@example(" \u0301é 1２ !! ?x\x1c\x1f \x1c")
def test_split_equals_regex(text):
    assert R.gpt2_split(text) == PAT.findall(text)


# --- 3. byte-level BPE encode and decode -----------------------------------------------------
@pytest.fixture(scope="module")
def gpt2_files():
    vocab, merges = R.load_gpt2(GPT2 / "vocab.json", GPT2 / "merges.txt")
    return vocab, merges, R.merge_ranks(vocab, merges), {i: t for t, i in vocab.items()}


@pytest.fixture(scope="module")
def gpt2_oracles():
    from tokenizers import ByteLevelBPETokenizer
    hf_gpt2 = ByteLevelBPETokenizer(str(GPT2 / "vocab.json"), str(GPT2 / "merges.txt"),
                                    add_prefix_space=False)
    return tiktoken_gpt2(), hf_gpt2


@settings(max_examples=300, deadline=None)
@given(gpt2_text)
@example("Hello world! It's 2024... naïve café, 性能 😀\n\n  x")
def test_gpt2_encode_equals_tiktoken_and_hf(gpt2_files, gpt2_oracles, text):
    vocab, merges, ranks, tokens = gpt2_files
    ids = R.encode(text, vocab, merges, ranks=ranks)
    assert ids == gpt2_oracles[0].encode_ordinary(text) == gpt2_oracles[1].encode(text).ids
    assert R.decode(ids, tokens.__getitem__) == text


def test_gpt2_encode_sample_and_long_chunks(gpt2_files, gpt2_oracles):
    vocab, merges, ranks, _ = gpt2_files
    sample = (TEST_DATA / "bpe_sample.txt").read_text("utf-8")
    for text in sample.splitlines(keepends=True) + ["a" * 300, "!?" * 100, " " * 50 + "x"]:
        assert R.encode(text, vocab, merges, ranks=ranks) == \
            gpt2_oracles[0].encode_ordinary(text) == gpt2_oracles[1].encode(text).ids


def test_decode_specials_end_a_run(gpt2_files):
    vocab, _, _, tokens = gpt2_files
    ids = [vocab["\u00e6"], vocab["<|endoftext|>"], vocab["\u00a2"]]  # bytes E6, then A2
    assert R.decode(ids, tokens.__getitem__, special_tokens=("<|endoftext|>",)) == \
        "\ufffd<|endoftext|>\ufffd"
    assert R.decode(ids[::2], tokens.__getitem__) == b"\xe6\xa2".decode("utf-8", "replace")


# --- 4. BPE training -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_counts():
    texts = [r["text"] for r in load_sample()[:40]]
    counts = R.count_chunks(texts)
    assert counts == count_chunks(texts).to_dict() == R.count_chunks(texts, PAT.findall)
    return counts


@pytest.mark.parametrize("substrate,extra,min_frequency,specials", [
    ("utf8", 250, 0, ()), ("utf16", 200, 2, ("<|endoftext|>", "<pad>")), ("ube", 250, 0, ("e",))])
def test_training_equals_trainer_and_hf(small_counts, substrate, extra, min_frequency,
                                        specials):
    size = len(R.SYMBOL_STRINGS[:512 if substrate == "ube" else 256]) + extra
    want = hf_bpe_train(small_counts, size, substrate, min_frequency, specials)
    got = R.train_bpe(small_counts, size, substrate, min_frequency, specials)
    assert got == train_from_counts(small_counts, size, substrate, min_frequency, specials)
    assert got == (want[0], want[1])


def test_training_classic_walkthrough_tie():
    counts = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
    vocab, merges = R.train_bpe(counts, 256 + 10, "utf8")
    assert merges[:5] == [("e", "s"), ("es", "t"), ("l", "o"), ("lo", "w"), ("e", "w")]
    assert (vocab, merges) == tuple(hf_bpe_train(counts, 256 + 10, "utf8"))


words = st.text(alphabet=st.sampled_from(list("aab b'é中😀\n")), min_size=1, max_size=10)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(words, st.integers(1, 9), max_size=10), st.sampled_from(R.SUBSTRATES),
       st.integers(0, 60), st.sampled_from([0, 0, 3]), st.sampled_from([(), ("ab",), ("a",)]))
def test_training_tiny_corpora_equals_hf(counts, substrate, extra, min_frequency, specials):
    size = (512 if substrate == "ube" else 256) + len(specials) + extra
    got = R.train_bpe(counts, size, substrate, min_frequency, specials)
    assert got == tuple(hf_bpe_train(counts, size, substrate, min_frequency, specials))


@pytest.mark.parametrize("substrate", ["utf16", "ube"])
def test_encode_with_trained_vocab_equals_hf_bpe_model(small_counts, substrate):
    from tokenizers import Tokenizer, models
    vocab, merges = R.train_bpe(small_counts, 512 + 300, substrate)
    model = Tokenizer(models.BPE(vocab, merges))
    for text in [r["text"] for r in load_sample()[40:60]] + ["性能😀 lowest"]:
        chunks = [R.symbol_string(R.symbol_ids(c, substrate)) for c in R.gpt2_split(text)]
        want = model.encode(chunks, is_pretokenized=True).ids if chunks else []
        assert R.encode(text, vocab, merges, substrate) == want


# --- 5. BERT WordPiece -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def bert_vocab():
    return vocab_dict()


@pytest.mark.parametrize("config", CONFIGS)
def test_wordpiece_code_points_strided(bert_vocab, config):
    texts = [f"a{c}b" for c in STABLE[::11]]
    want = [e.ids for e in hf(config).encode_batch(texts, add_special_tokens=False)]
    bad = [t for t, w in zip(texts, want) if R.wordpiece(t, bert_vocab, **CONFIGS[config]) != w]
    assert not bad, [ascii(t) for t in bad[:10]]


@pytest.mark.parametrize("config", CONFIGS)
def test_wordpiece_edge_cases(bert_vocab, config):
    cases = EDGE_CASES + ["ΣΑΣ ΟΔΟΣ.", "a\U0002b820b\U0002b91fc", "a\u0378b"]
    want = [e.ids for e in hf(config).encode_batch(cases, add_special_tokens=False)]
    got = [R.wordpiece(t, bert_vocab, **CONFIGS[config]) for t in cases]
    assert [(ascii(t), g) for t, g in zip(cases, got)] == \
        [(ascii(t), w) for t, w in zip(cases, want)]


stable_text = st.text(st.sampled_from([c for c in MIXED if c in set(STABLE)]) |
                      st.sampled_from(STABLE), max_size=60)


@settings(max_examples=200, deadline=None)
@given(stable_text, st.sampled_from(sorted(CONFIGS)))
def test_wordpiece_equals_hf(bert_vocab, text, config):
    want = hf(config).encode(text, add_special_tokens=False).ids
    assert R.wordpiece(text, bert_vocab, **CONFIGS[config]) == want


def test_wordpiece_equals_bert_tokenizer_fast_json(bert_vocab):
    """The shipped ``tokenizer.json`` (what ``BertTokenizerFast`` loads), unpadded."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(HF_JSON))
    tok.no_padding()
    tok.no_truncation()
    texts = [MIXED, "Hello, World! Don't stop: naïve Ångström 中文 " * 3, "x" * 101,
             "unaffable jumping"] + [r["text"] for r in load_sample()[::50]]
    for t in texts:
        assert R.wordpiece(t, bert_vocab) == tok.encode(t, add_special_tokens=False).ids


def test_wordpiece_word_greedy_longest_match():
    vocab = {"[UNK]": 0, "a": 1, "abcd": 2, "##b": 3, "##bc": 4, "##z": 5}
    assert [R.wordpiece_word(w, vocab) for w in ("abcz", "abcd", "abc", "ab", "abx")] == \
        [[1, 4, 5], [2], [1, 4], [1, 3], [0]]
    assert R.wordpiece_word("a" * 101, {"[UNK]": 0, "a": 1, "##a": 2}) == [0]
