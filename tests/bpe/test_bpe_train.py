"""BPE trainer: chunk counting against regex + Counter, merges and vocab against HF
``BpeTrainer`` (the external oracle) run on the same chunks mapped to symbol strings. The 32K
training on the shared corpus (``-m slow``) is tests/parity/test_bpe_slow.py."""
import pickle

import pyarrow as pa
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.bpe.conftest import SUBSTRATES, assert_same_as_hf
from tests.conftest import corpus_lines, hf_bpe_train, hf_pattern, reference_pattern
from corpustok import reference
from corpustok.bpe.train import ChunkCounts, count_chunks, train, train_from_counts
from corpustok.pipeline.jobs.demo import load_sample
from corpustok.substrate import alphabet

SPECIALS = ("<|endoftext|>", "<pad>")


def reference_counts(texts):
    """:func:`corpustok.reference.count_chunks` splitting with ``regex`` (the oracle)."""
    return reference.count_chunks(texts, regex.compile(reference_pattern("gpt2")).findall)


def test_classic_walkthrough():
    counts = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
    vocab, merges = train_from_counts(counts, 256 + 10, "utf8")
    hf_vocab, hf_merges = hf_bpe_train(counts, 256 + 10, "utf8")
    assert merges[:4] == [("e", "s"), ("es", "t"), ("l", "o"), ("lo", "w")]
    # The three-way tie at count 6 (n e, e w, w est) goes to the smallest id pair in HF.
    assert hf_merges[4] == ("e", "w") and merges[4] == hf_merges[4]
    assert (vocab, merges) == (hf_vocab, hf_merges)
    assert vocab["es"] == 256 and vocab["est"] == 257  # merged tokens follow the alphabet


@pytest.mark.parametrize("substrate", SUBSTRATES)
def test_alphabet_ids_follow_code_points(substrate):
    vocab, merges = train_from_counts({}, 1000, substrate, special_tokens=SPECIALS)
    assert merges == []
    symbols = sorted(alphabet(substrate))
    assert list(vocab) == [*SPECIALS, *symbols]
    assert list(vocab.values()) == list(range(len(SPECIALS) + len(symbols)))


words = st.text(alphabet=st.sampled_from(list("ab ab'é中😀\n")), min_size=1, max_size=10)


@given(counts=st.dictionaries(words, st.integers(1, 9), max_size=10),
       substrate=st.sampled_from(SUBSTRATES), extra=st.integers(0, 80),
       min_frequency=st.sampled_from([0, 0, 2, 5]),
       specials=st.sampled_from([(), ("ab",), ("a", "<s>", "a"), SPECIALS]))
@settings(max_examples=250, deadline=None)
def test_hf_parity_small_corpora(counts, substrate, extra, min_frequency, specials):
    """Tiny alphabets force ties, overlapping pairs (aaaa) and merges that rebuild an
    existing string (a+bc and ab+c), the corners of HF's algorithm."""
    base = len(alphabet(substrate)) + len(set(specials))
    assert_same_as_hf(counts, base + extra, substrate, min_frequency, specials)


@pytest.fixture(scope="module")
def sample_counts():
    """Chunk counts of the embedded multilingual UDHR sample (532 languages), shipped."""
    rows = load_sample()
    return count_chunks([r["text"] for r in rows[::4]]).to_dict()


@pytest.mark.parametrize("substrate", SUBSTRATES)
@pytest.mark.parametrize("vocab_size,min_frequency,specials", [
    (700, 0, ()), (2000, 0, SPECIALS), (4000, 3, ()), (4000, 2, SPECIALS)])
def test_hf_parity_shipped_sample(sample_counts, substrate, vocab_size, min_frequency,
                                  specials):
    vocab, merges = assert_same_as_hf(sample_counts, vocab_size, substrate, min_frequency,
                                      specials)
    assert len(vocab) <= vocab_size


@pytest.fixture(scope="module")
def corpus_counts():
    # 40 KB of each shared corpus file, or on a fresh clone the shipped sample's lines
    return count_chunks(corpus_lines(40_000, at_least=2_000)).to_dict()


@pytest.mark.parametrize("substrate", SUBSTRATES)
@pytest.mark.parametrize("vocab_size,min_frequency,specials", [
    (1000, 0, ()), (5000, 0, SPECIALS), (5000, 4, ())])
def test_hf_parity_shared_corpus(corpus_counts, substrate, vocab_size, min_frequency,
                                 specials):
    assert_same_as_hf(corpus_counts, vocab_size, substrate, min_frequency, specials)


texts_st = st.lists(st.one_of(st.none(), st.text(max_size=30)), max_size=12)


@given(texts_st, st.integers(1, 5))
@settings(max_examples=200, deadline=None)
def test_count_chunks_equals_reference(texts, n_parts):
    want = reference_counts([t for t in texts if t])
    assert count_chunks(texts).to_dict() == want
    # The mergeable form: counting parts separately and merging gives the same table.
    parts = [ChunkCounts().add(texts[i::n_parts] or [""]) for i in range(n_parts)]
    merged = parts[0]
    for p in parts[1:]:
        merged.merge(pickle.loads(pickle.dumps(p)))
    assert merged.to_dict() == want


def test_count_chunks_inputs():
    texts = ["it's a test", "a test", None, ""]
    want = reference_counts(["it's a test", "a test"])
    assert count_chunks(pa.array(texts)).to_dict() == want
    assert count_chunks(iter([pa.array(texts[:2], pa.large_string()), "a test"])).to_dict() \
        == reference_counts(["it's a test", "a test", "a test"])
    raw = pa.array([b"ab\xff cd", b"\xffcd"], pa.binary())
    assert count_chunks(raw).to_dict() == reference_counts(["ab\ufffd cd", "\ufffdcd"])
    table = ChunkCounts().add_chunks(["x", "y", "x"], [2, 3, 4])
    assert table.to_dict() == {"x": 6, "y": 3} and len(table) == 2


def test_train_equals_count_then_train():
    rows = load_sample()
    texts = [r["text"] for r in rows[:300]]
    counts = count_chunks(texts)
    assert train(texts, 900, "ube", 2, SPECIALS) == \
        train_from_counts(counts.to_dict(), 900, "ube", 2, SPECIALS) == \
        train_from_counts(counts, 900, "ube", 2, SPECIALS)


def test_errors():
    with pytest.raises(ValueError, match="substrate"):
        train(["a"], 300, substrate="utf32")
    with pytest.raises(ValueError, match="vocab_size"):
        train_from_counts({"a": 1}, -1)
    with pytest.raises(ValueError, match="min_frequency"):
        train_from_counts({"a": 1}, 300, min_frequency=-2)
    with pytest.raises(TypeError, match="special_tokens"):
        train_from_counts({"a": 1}, 300, special_tokens="<s>")
    with pytest.raises(ValueError, match="negative"):
        train_from_counts({"a": -1}, 300)
    with pytest.raises(TypeError):
        train_from_counts([("a", 1)], 300)
    with pytest.raises(TypeError, match="single str"):
        count_chunks("not a list")
    with pytest.raises(TypeError, match="int"):
        count_chunks([1, 2])


@pytest.mark.parametrize("name", ["cl100k", "o200k"])
@pytest.mark.parametrize("substrate", ["utf8", "ube"])
def test_modern_pretokenizer_training_equals_hf(name, substrate):
    """Counting with a modern split (regex's chunks) and learning from them is HF's trainer;
    for utf8 also HF's own pipeline: Split(Regex, isolated) + ByteLevel(use_regex=False)."""
    from corpustok.bpe.tokenizer import BytePairTokenizer

    texts = [r["text"] for r in load_sample()[:300]]
    counts = reference.count_chunks(texts, regex.compile(reference_pattern(name)).findall)
    assert count_chunks(texts, pretokenizer=name).to_dict() == counts
    got = train(texts, 256 + 300 if substrate == "utf8" else 512 + 300, substrate,
                pretokenizer=name)
    assert got == hf_bpe_train(counts, len(got[0]), substrate)
    tok = BytePairTokenizer.train(texts, len(got[0]), substrate, pretokenizer=name)
    assert tok.pretokenizer == name and tok.merges == got[1]
    if substrate == "utf8":
        import json

        from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers
        hf = Tokenizer(models.BPE())
        hf.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(hf_pattern(name)), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        hf.train_from_iterator(texts, trainers.BpeTrainer(
            vocab_size=len(got[0]), show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        model = json.loads(hf.to_str())["model"]
        assert got[0] == model["vocab"]
        assert got[1] == [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
                          for m in model["merges"]]


def test_counts_of_different_pretokenizers_do_not_merge():
    a = count_chunks(["a b"], pretokenizer="o200k")
    with pytest.raises(ValueError, match="pre-tokenizer"):
        count_chunks(["a b"]).merge(a)
    assert pickle.loads(pickle.dumps(a)).pretokenizer == "o200k"
