"""Fast WordPiece parity with HF ``tokenizers`` (the external oracle) and with readable
pure-Python references, for the four BertNormalizer option sets of issue 3 and
``clean_text=False`` (CONFIGS: the five docs/guarantees.md names)."""
import functools
import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

import corpustok
from corpustok.arrow import utf8_batch
from corpustok.reference import wordpiece_word
from corpustok.wordpiece.tokenizer import WordPiece
from tests.conftest import SHARED_DATA, TEST_DATA, read_xz_text, sample_texts

VOCAB = TEST_DATA / "bert-base-uncased" / "vocab.txt"
HF_JSON = TEST_DATA / "bert-base-uncased" / "tokenizer.json"
CONFIGS = {
    "uncased": dict(lowercase=True, strip_accents=None, handle_chinese_chars=True),
    "cased": dict(lowercase=False, strip_accents=False, handle_chinese_chars=True),
    "cased_strip": dict(lowercase=False, strip_accents=True, handle_chinese_chars=True),
    "no_chinese": dict(lowercase=True, strip_accents=None, handle_chinese_chars=False),
    "no_clean": dict(lowercase=True, strip_accents=None, handle_chinese_chars=True,
                     clean_text=False),  # beyond the four
}
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SCALARS = np.array([c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF])


def vocab_dict():
    with open(VOCAB, encoding="utf-8") as f:
        return {line.rstrip("\n"): i for i, line in enumerate(f)}


@functools.lru_cache(maxsize=None)
def ours(config, special=False):
    return WordPiece.from_vocab(VOCAB, recognize_special_tokens=special, **CONFIGS[config])


@functools.lru_cache(maxsize=None)
def hf(config, special=False):
    """The issue's reference: HF built from components, no added tokens, no post-processor."""
    o = CONFIGS[config]
    tok = Tokenizer(models.WordPiece(vocab_dict(), unk_token="[UNK]",
                                     max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=o.get("clean_text", True), handle_chinese_chars=o["handle_chinese_chars"],
        strip_accents=o["strip_accents"], lowercase=o["lowercase"])
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    if special:
        tok.add_special_tokens(SPECIALS)
    return tok


def hf_ids(tok, texts, chunk=50_000):
    out = []
    for k in range(0, len(texts), chunk):
        out.extend(e.ids for e in tok.encode_batch(texts[k:k + chunk], add_special_tokens=False))
    return out


def mismatches(config, texts, special=False):
    got = ours(config, special).encode_batch(texts).to_pylist()
    want = hf_ids(hf(config, special), texts)
    assert len(got) == len(want) == len(texts)
    return [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]


def sweep(config, cps):
    chars = [chr(c) for c in cps]
    bad = mismatches(config, chars) + mismatches(config, ["a" + c + "b" for c in chars])
    assert not bad, f"{len(bad)} mismatches, first: {[(ascii(t), g, w) for t, g, w in bad[:5]]}"


@pytest.mark.parametrize("config", CONFIGS)
def test_every_code_point_strided(config):
    """All of U+0000..U+07FF and every 61st scalar above, alone and as "a" + c + "b"
    (the full sweep is in test_wordpiece_slow.py)."""
    sweep(config, np.concatenate([SCALARS[:0x800], SCALARS[0x800::61]]))


EDGE_CASES = [
    # 1. length limit (characters of the normalized word), multibyte words
    "a" * 99, "a" * 100, "a" * 101, "б" * 51, "ก" * 34, "é" * 60, "e\u0301" * 60,
    "x" * 100 + "\u3000" + "y", "a" * 100 + ".", "ab" * 60 + " ok",
    # 2. control and format characters
    "a\u200bb", "co\u00adop", "a\x0bb", "a\x00b", "a\ufffdb", "a\ue000b", "\x85", "a\x85b",
    "a\x1fb", "a\u2066b\u2069",
    # 3. case mapping
    "ΣΑΣ", "οδοσ", "İstanbul", "ß", "ﬁ", "ＡＢＣ", "²", "Ǆ", "ẞ",
    # 4. accents
    "naïve", "Rhône", "バ", "ハ", "a\u0903b", "a\u20ddb", "Ångström café",
    # 5. CJK
    "a\U0002B820b", "a\U0002B920b", "中文abc中", "カタカナ", "한국어", "a\uf900b", "a\U0002f800b",
    # 6. punctuation classes
    "$+<=>^`|~", "abc€def", "© ± →", "😀", "Cretaceous–Paleogene", "a，b", "a\u05c3b",
    "a\u1b7fb", ".....", "don't", "«quote»", "¿qué?",
    # 7. unknown handling
    "\u2603abc", "ab\u2603c", "abc\u2603", "X.wanted", "wantXwanted.", "\u2603\u2603 \u2603",
    "a\u2603.b",
    # 8. suffix indicator
    "#", "##", "###", "####", "##abc", "a##b", "#hash #tag",
    # 9. whitespace
    "", " ", "  a  b  ", "\t\n\r", "a\u00a0b", "a\u3000b", "a\u2028b\u2029c", "a\x0cb",
    "a\u1680b\u205fc",
    # 10. special tokens as text, emoji, digits
    "[MASK]", "[CLS] hello [SEP]", "[UNK]", "🧑\u200d🔬", "1234567890", "3.14",
]


@pytest.mark.parametrize("config", CONFIGS)
def test_edge_cases(config):
    bad = mismatches(config, EDGE_CASES)
    assert not bad, [(ascii(t), g, w) for t, g, w in bad]


MIXED = ("abcxyzABCXYZ0189 .,;:!?'\"()[]{}#-_/\\@$%^&*+=<>|~`"
         "éèêëïîôöüçñÅÆØßðþ" "ΑΒΓΣαβγσςάέ" "АБВабвёй" "中文字漢語" "ひらがなカタカナ" "한국어"
         "ภาษาไทย" "العربية" "\u0301\u0308\u0327\u0903\u20dd" "😀🧑\u200d🔬€©±→–—…，。"
         "\t\n\r\x00\x0b\x0c\x85\xa0\u3000\u2028\u200b\xad\ufffd\ue000" "ﬁＡＢＣ²İ")
texts = st.text(alphabet=st.sampled_from(MIXED) | st.characters(codec="utf-8"), max_size=80)


@pytest.mark.parametrize("config", CONFIGS)
@settings(max_examples=150, deadline=None)
@given(batch=st.lists(texts, min_size=1, max_size=20))
def test_mixed_scripts_hypothesis(config, batch):
    bad = mismatches(config, batch)
    assert not bad, [(ascii(t), g, w) for t, g, w in bad]


def test_multilingual_sample():
    path = SHARED_DATA / "corpus" / "gflanguages_samples.txt.xz"
    if path.is_file():  # Google Fonts' language samples: 2,093 lines
        lines = read_xz_text(path, 400_000).splitlines()
    else:  # a fresh clone: the UDHR sample's 532 languages, edge strings, Unicode 15-16
        lines = [t for text in sample_texts() for t in text.splitlines()]
    assert len(lines) > 2_000, len(lines)
    for config in CONFIGS:
        bad = mismatches(config, lines)
        assert not bad, (config, len(bad), [ascii(t[:80]) for t, _, _ in bad[:3]])


# ---------------------------------------------------------------- special tokens
SPECIAL_TEXTS = ["[MASK]", "a[MASK]b", "[CLS] x [SEP][SEP]", "[MAS[MASK]K]", "[[CLS]]",
                 "x [UNK] y", "[PAD][PAD]", "hello [mask] [MASK].", "[SEP"]


def test_special_tokens_plain_text_by_default():
    wp = ours("uncased")
    assert wp.encode("[MASK]") == [wp.token_to_id(t) for t in ("[", "mask", "]")]
    assert not mismatches("uncased", SPECIAL_TEXTS)


@pytest.mark.parametrize("config", ["uncased", "cased"])
def test_special_tokens_option_matches_hf_added_tokens(config):
    bad = mismatches(config, SPECIAL_TEXTS, special=True)
    assert not bad, bad


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(SPECIALS + ["[", "]", "MASK", "a", " ", "é", "中", "[MA"]),
                max_size=12))
def test_special_tokens_hypothesis(parts):
    text = "".join(parts)
    assert not mismatches("uncased", [text], special=True)


# ---------------------------------------------------------------- streaming
@settings(max_examples=150, deadline=None)
@given(text=texts, cuts=st.lists(st.integers(0, 80), max_size=8), special=st.booleans())
def test_stream_equals_whole(text, cuts, special):
    if special:
        text = text.replace("x", "[MASK]").replace("y", "[SEP]")
    wp = ours("uncased", special)
    bounds = sorted({min(c, len(text)) for c in cuts})
    enc = wp.stream()
    got = []
    prev = 0
    for c in bounds + [len(text)]:
        got += enc.feed(text[prev:c])
        prev = c
    got += enc.finish()
    assert got == wp.encode(text)
    assert enc.feed("hello") + enc.finish() == wp.encode("hello")  # reusable after finish


# Words glued from vocabulary pieces: their end flushes several failure pops at once (the
# case a random alphabet rarely builds). Issue 12: "glob" streamed lost its last id.
_PIECES = sorted(t for t in vocab_dict() if t.isalpha() and t.isascii() and 2 <= len(t) <= 5)
words = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4).map("".join)
word_texts = st.lists(words | st.sampled_from([" ", ". ", "\n", "é", "##"]),
                      min_size=1, max_size=6).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=word_texts, cuts=st.lists(st.integers(0, 40), max_size=4))
def test_stream_equals_whole_on_vocabulary_words(text, cuts):
    want = hf_ids(hf("uncased"), [text])[0]
    enc = ours("uncased").stream()
    got, prev = [], 0
    for c in sorted({min(c, len(text)) for c in cuts}) + [len(text)]:
        got += enc.feed(text[prev:c])
        prev = c
    assert got + enc.finish() == want


@pytest.mark.parametrize("text", ["glob", "zombies glob", "glob.", "unaffable", "x" * 3])
def test_stream_flushes_every_pop_of_the_last_word(text):
    wp = ours("uncased")
    enc = wp.stream()
    assert enc.feed(text) + enc.finish() == wp.encode(text) == hf_ids(hf("uncased"), [text])[0]


def test_stream_memory_is_bounded_by_the_word():
    wp = ours("uncased")
    enc = wp.stream()
    out = []
    for _ in range(1000):
        out += enc.feed("hello world ")
        assert len(enc._pending) <= 2 and len(enc._tail) == 0
    for k in range(1, 101):
        out += enc.feed("a" * 50)  # one 5000-char word: [UNK] once past 100 chars
        assert len(enc._pending) <= 100
        if k * 50 > 100:  # past max_input_chars_per_word the word is dropped as it comes
            assert len(enc._pending) == 0
    out += enc.finish()
    assert out == wp.encode("hello world " * 1000 + "a" * 5000)


# ---------------------------------------------------------------- batch API, bytes
def test_encode_batch_arrow_and_nulls():
    wp = ours("uncased")
    arr = pa.array(["Hello world", None, "", "naïve café"], pa.string())
    got = wp.encode_batch(arr)
    assert got.type == pa.list_(pa.int32())
    assert got.to_pylist() == [wp.encode("Hello world"), None, [], wp.encode("naïve café")]
    assert wp.encode_batch(pa.chunked_array([arr[:2], arr[2:]])).to_pylist() == got.to_pylist()


@pytest.mark.parametrize("threads", [2, 3])
def test_threads_give_hf_ids(threads):
    """Document ranges on several threads, joined in order: HF's ids, nulls and replacement
    counts kept."""
    from corpustok.parallel import MIN_PART_BYTES
    texts = ["Hello world, naïve café!", None, "", "東京 tower \xff", "[CLS] x"] * 6000
    assert len("".join(t or "" for t in texts).encode()) > 3 * MIN_PART_BYTES
    wp = ours("uncased")
    got = wp.encode_batch(texts, threads=threads).to_pylist()
    assert got == [None if t is None else w for t, w in
                   zip(texts, hf_ids(hf("uncased"), [t or "" for t in texts]))]
    one = wp.encode_arrays(utf8_batch(texts))
    many = wp.encode_arrays(utf8_batch(texts), threads=threads)
    assert all(np.array_equal(a, b) for a, b in zip(one, many))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=10))
def test_invalid_utf8_reads_as_python_replace(docs):
    wp = ours("cased")
    ids, offsets, replaced = wp.encode_arrays(utf8_batch(pa.array(docs, pa.binary())))
    for d, raw in enumerate(docs):
        text = raw.decode("utf-8", "replace")
        assert ids[offsets[d]:offsets[d + 1]].tolist() == wp.encode(text)
        assert replaced[d] == text.count("\ufffd") - raw.count("\ufffd".encode())


def test_lone_surrogates_count_as_replaced():
    wp = ours("cased")
    ids, offsets, replaced = wp.encode_arrays(utf8_batch(["a\ud800b", "ok"]))
    assert replaced.tolist() == [1, 0]
    assert ids[offsets[0]:offsets[1]].tolist() == wp.encode("a\ufffdb")


# ---------------------------------------------------------------- single-word LinMaxMatch
small_tokens = st.text(alphabet="ab#c", min_size=0, max_size=5)


@settings(max_examples=40, deadline=None)
@given(tokens=st.lists(small_tokens, min_size=1, max_size=25),
       words=st.lists(st.text(alphabet="ab#cd", max_size=12), min_size=1, max_size=20),
       prefix=st.sampled_from(["##", "#", "c", "xyz"]), max_chars=st.integers(0, 12))
def test_linmaxmatch_single_word(tokens, words, prefix, max_chars):
    tokens = ["[UNK]"] + tokens
    wp = WordPiece(tokens, suffix_indicator=prefix, max_input_chars_per_word=max_chars)
    vocab = {t: i for i, t in enumerate(tokens)}
    ref = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", continuing_subword_prefix=prefix,
                                     max_input_chars_per_word=max_chars))
    got = wp.encode_words(words).to_pylist()
    assert len(got) == len(words)
    for w, g in zip(words, got):
        assert g == wordpiece_word(w, vocab, "[UNK]", prefix, max_chars), w
        assert g == (ref.encode(w).ids if w else []), w


@settings(max_examples=40, deadline=None)
@given(tokens=st.lists(st.text(alphabet="ab#.c", min_size=1, max_size=5), max_size=25),
       batch=st.lists(st.text(alphabet="ab#.c d", max_size=20), min_size=1, max_size=10))
def test_e2e_small_vocabularies(tokens, batch):
    """Failure links and pops on adversarial vocabularies, through the whole E2E path."""
    tokens = ["[UNK]"] + tokens
    wp = WordPiece(tokens, max_input_chars_per_word=6)
    vocab = {t: i for i, t in enumerate(tokens)}
    ref = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=6))
    ref.normalizer = normalizers.BertNormalizer()
    ref.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    assert wp.encode_batch(batch).to_pylist() == hf_ids(ref, batch)


def test_failure_pops_example_from_the_paper():
    """TF Text's header example: vocab {a, abcd, ##b, ##bc, ##z}, input abcz."""
    tokens = ["[UNK]", "a", "abcd", "##b", "##bc", "##z"]
    wp = WordPiece(tokens)
    assert wp.encode_words(["abcz", "abcd", "abc", "ab"]).to_pylist() == \
        [[1, 4, 5], [2], [1, 4], [1, 3]]


def test_long_tokens_are_linear_and_exact():
    tokens = ["[UNK]"] + ["a" * k for k in range(1, 201)] + ["##" + "a" * k for k in range(1, 50)]
    wp = WordPiece(tokens, max_input_chars_per_word=10**6)
    vocab = {t: i for i, t in enumerate(tokens)}
    for n in (1, 199, 200, 201, 250, 1000):
        assert wp.encode_words(["a" * n]).to_pylist()[0] == \
            wordpiece_word("a" * n, vocab, "[UNK]", "##", 10**6)


# ---------------------------------------------------------------- decode
def hf_decode(wp, ids):
    return decoders.WordPiece(prefix="##", cleanup=True).decode([wp.id_to_token(i) for i in ids])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 30521), max_size=15), min_size=1, max_size=8))
def test_decode_matches_hf_decoder(batch):
    wp = ours("uncased")
    assert wp.decode_batch(batch) == [hf_decode(wp, ids) for ids in batch]


def test_decode_of_encoded_text():
    wp = ours("uncased")
    for text in ["Hello, world! I'm here; don't go.", "naïve café 中文", ""]:
        ids = wp.encode(text)
        assert wp.decode(ids) == hf_decode(wp, ids)
    assert wp.decode(wp.encode("hello world.")) == "hello world."
    with pytest.raises(ValueError, match="is not a token id of this vocabulary"):
        wp.decode([5, 10**6])


# ---------------------------------------------------------------- files and construction
def test_save_load_roundtrip(tmp_path):
    for config in ("uncased", "cased_strip"):
        wp = ours(config)
        path = tmp_path / f"{config}.json"
        wp.save(path)
        back = corpustok.load(path)
        assert isinstance(back, WordPiece) and back.to_dict() == wp.to_dict()
        assert back.encode(EDGE_CASES[20]) == wp.encode(EDGE_CASES[20])
        assert json.loads(path.read_text(encoding="utf-8"))["type"] == "wordpiece"


def test_hf_json_and_vocab_txt_load():
    from_json = WordPiece.from_hf_json(HF_JSON)
    assert from_json.to_dict() == ours("uncased").to_dict()
    assert corpustok.load(HF_JSON).to_dict() == from_json.to_dict()
    assert corpustok.load(VOCAB).to_dict() == from_json.to_dict()
    ref = Tokenizer.from_file(str(HF_JSON))
    ref.no_truncation()
    ref.no_padding()
    text = "The [MASK] sat on the mat, naïvely."
    special = WordPiece.from_hf_json(HF_JSON, recognize_special_tokens=True)
    assert special.encode(text) == ref.encode(text, add_special_tokens=False).ids


def test_npz_cache(tmp_path):
    cache = tmp_path / "wp.npz"
    a = WordPiece.from_vocab(VOCAB, cache=cache)
    a.encode("built on first use")
    assert cache.exists()
    b = WordPiece.from_vocab(VOCAB, cache=cache)
    assert a.memory_report() == b.memory_report()
    assert all(np.array_equal(a._arrays[k], b._arrays[k]) for k in a._arrays)
    c = WordPiece.from_vocab(VOCAB, lowercase=False, cache=cache)  # other options: rebuilt
    assert c.encode("Hello") == hf_ids(hf("cased"), ["Hello"])[0]
    cache.write_bytes(cache.read_bytes()[:100])  # a truncated cache is rebuilt, not fatal
    d = WordPiece.from_vocab(VOCAB, cache=cache)
    assert d.encode("built on first use") == a.encode("built on first use")
    assert [p.name for p in tmp_path.iterdir()] == ["wp.npz"]


def test_memory_report():
    wp = ours("uncased")
    report = wp.memory_report()
    assert wp.memory_bytes == sum(report.values()) < 8 * 2**20
    assert {"da", "info", "pool", "stage1", "stage2"} <= set(report)


def test_vocabulary_api():
    wp = ours("uncased")
    assert wp.vocab_size == 30522
    assert wp.token_to_id("hello") == vocab_dict()["hello"]
    assert wp.id_to_token(wp.token_to_id("##ing")) == "##ing"
    assert wp.token_to_id("not-a-token") is None and wp.id_to_token(-1) is None


def test_boundary_errors(tmp_path):
    with pytest.raises(ValueError, match="unk_token"):
        WordPiece(["a", "b"])
    with pytest.raises(TypeError, match="str"):
        ours("uncased").encode(b"bytes")
    bad = tmp_path / "bpe.json"
    bad.write_text(json.dumps({"model": {"type": "BPE", "vocab": {}}}))
    with pytest.raises(ValueError, match="WordPiece"):
        WordPiece.from_hf_json(bad)
    latin = tmp_path / "vocab.txt"
    latin.write_bytes(b"[UNK]\n\xff\n")
    with pytest.raises(ValueError, match="UTF-8"):
        WordPiece.from_vocab(latin)


def test_decode_batch_keeps_nulls_takes_chunks_and_rejects_non_integers():
    wp = ours("uncased")
    ids = wp.encode_batch(["hello world", None, "unaffable"])
    want = [wp.decode(x) if x is not None else None for x in ids.to_pylist()]
    assert want[0] == "hello world" and want[1] is None
    assert wp.decode_batch(ids) == want
    assert wp.decode_batch(pa.chunked_array([ids.slice(0, 2), ids.slice(2)])) == want
    with pytest.raises(TypeError, match="integers"):
        wp.decode([7592.0])
    with pytest.raises(TypeError, match="integers"):
        wp.decode(["7592"])
