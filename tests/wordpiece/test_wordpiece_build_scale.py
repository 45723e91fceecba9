"""WordPiece tables built from a large synthetic vocabulary (issue 12): ids equal to HF
``tokenizers`` built from the same vocabulary. Correctness only; build time is measured by
``bench/wordpiece_build.py``, never asserted."""
import numpy as np
import pytest
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from corpustok.wordpiece.tokenizer import WordPiece

# Latin, Greek, Cyrillic and 1,500 Hangul syllables (letters that BERT neither isolates nor
# splits when accents are kept): the Hangul gives trie nodes with many children spread over a
# wide symbol range, the hard case of the double-array placement.
ALPHABET = ("abcdefghijklmnopqrstuvwxyz0123456789éèàçñöüßøαβγδεκλμкнорст"
            + "".join(chr(0xAC00 + 7 * k) for k in range(1500)))
PUNCT = ".,;:!?()-'\""
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
N_TOKENS = 200_000
CASED = dict(lowercase=False, strip_accents=False, handle_chinese_chars=True, clean_text=True)


def _words(rng, k, letters, weights, lengths=(1, 11)):
    sizes = rng.integers(*lengths, size=k)
    chars = rng.choice(letters, size=int(sizes.sum()), p=weights)
    ends = np.cumsum(sizes)
    return ["".join(chars[e - s:e]) for s, e in zip(sizes.tolist(), ends.tolist())]


@pytest.fixture(scope="module")
def vocab():
    """``N_TOKENS`` tokens: the specials, most single characters alone and as ``##`` pieces,
    then random words and ``##`` pieces (Zipf-like letters, so that prefixes are shared);
    a few duplicates (the last id wins) and the bare suffix ``##``."""
    rng = np.random.default_rng(12)
    letters = np.array(list(ALPHABET))
    weights = 1.0 / np.arange(1, len(letters) + 1) ** 0.9
    weights /= weights.sum()
    keep = [c for c in ALPHABET if rng.random() < 0.97]
    tokens = SPECIALS + keep + ["##" + c for c in keep] + ["##"]
    seen = set(tokens)
    while len(tokens) < N_TOKENS - 100:
        for w in _words(rng, N_TOKENS, letters, weights):
            tok = "##" + w if rng.random() < 0.35 else w
            if tok not in seen and len(tokens) < N_TOKENS - 100:
                seen.add(tok)
                tokens.append(tok)
    tokens += [tokens[int(i)] for i in rng.integers(len(SPECIALS), len(tokens), size=100)]
    return tokens, letters, weights


@pytest.fixture(scope="module")
def models_pair(vocab):
    tokens = vocab[0]
    ours = WordPiece(tokens, **CASED)
    ids = {t: i for i, t in enumerate(tokens)}  # the last id wins, as in ours
    e2e = Tokenizer(models.WordPiece(ids, unk_token="[UNK]", max_input_chars_per_word=100))
    e2e.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=False, lowercase=False)
    e2e.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    bare = Tokenizer(models.WordPiece(ids, unk_token="[UNK]", max_input_chars_per_word=100))
    return ours, e2e, bare


def _test_words(vocab, k=30_000):
    """Concatenated vocabulary pieces (failure links and pops), random letter strings (dead
    ends), pieces with one letter changed, words over 100 characters."""
    tokens, letters, weights = vocab
    rng = np.random.default_rng(7)
    out = []
    for _ in range(k // 3):
        parts = [tokens[int(i)] for i in rng.integers(len(SPECIALS), len(tokens), 4)]
        out.append("".join(p.removeprefix("##") for p in parts[:rng.integers(1, 5)]))
    out += _words(rng, k // 3, letters, weights, (1, 16))
    for w in out[:k // 3]:
        j = int(rng.integers(len(w)))
        out.append(w[:j] + str(rng.choice(letters)) + w[j + 1:])
    out += ["".join(out[int(i)] for i in rng.integers(0, len(out), 40)) for _ in range(50)]
    return out


def test_e2e_ids_equal_hf(vocab, models_pair):
    ours, e2e, _ = models_pair
    words = _test_words(vocab)
    rng = np.random.default_rng(8)
    texts = []
    for k in range(0, len(words), 20):
        seps = rng.choice([" ", "  ", "\t", "\n", *PUNCT, " 中 ", ", "], size=20)
        texts.append("".join(w + s for w, s in zip(words[k:k + 20], seps)))
    got = ours.encode_batch(texts).to_pylist()
    want = [e.ids for e in e2e.encode_batch(texts, add_special_tokens=False)]
    bad = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    assert not bad, f"{len(bad)} of {len(texts)} texts differ, first: {bad[0]!r}"


def test_single_word_ids_equal_hf(vocab, models_pair):
    ours, _, bare = models_pair
    words = [w for w in _test_words(vocab) if w]
    got = ours.encode_words(words).to_pylist()
    want = [e.ids for e in bare.encode_batch(words, add_special_tokens=False)]
    bad = [(t, g, w) for t, g, w in zip(words, got, want) if g != w]
    assert not bad, f"{len(bad)} of {len(words)} words differ, first: {bad[0]!r}"
    assert ours.encode_words(["##"]).to_pylist() == [bare.encode("##").ids]
