"""Seeded fuzz of every tokenizer kind: random bytes and random text cut into random chunks,
streamed (``stream().feed`` + ``finish``) versus encoded whole, and batch encoding versus one
document at a time. Small enough for the default suite; the seed is fixed so a failure
reproduces, and printed in the assertion."""
import random

import pytest

from corpustok import BytePairTokenizer, WordPiece
from tests.conftest import TEST_DATA

SEED = 20261201
CASES = 300
# Pieces that stress word ends, failure pops, specials, contractions and the UBE split.
WORDS = ["glob", "zombies", "unaffable", "##", "'s", "'ll", "é", "ß", "中文", "日本語", "😀",
         "👩‍👩‍👧", "\u0301", "<|endoftext|>", "[SEP]", "[MASK]", "123", "4567", "a" * 30, "x",
         "\ufffd", "Straße", "naïve"]
SEPARATORS = ["", " ", "  ", "\n", "\r\n", "\t", ".", "!?", "\u00a0", "\u3000"]


def _tokenizers():
    gpt2 = TEST_DATA / "gpt2"
    bert = TEST_DATA / "bert-base-uncased" / "vocab.txt"
    sample = (TEST_DATA / "bpe_sample.txt").read_text("utf-8").splitlines()
    toks = {
        "wordpiece-uncased": WordPiece.from_vocab(bert),
        "wordpiece-cased-special": WordPiece.from_vocab(bert, lowercase=False,
                                                        strip_accents=False,
                                                        recognize_special_tokens=True),
        "gpt2": BytePairTokenizer.from_hf(gpt2 / "vocab.json", gpt2 / "merges.txt"),
    }
    for substrate in ("ube", "utf8", "utf16"):
        toks[f"bpe-{substrate}"] = BytePairTokenizer.train(
            sample, 600, substrate=substrate, special_tokens=["<|endoftext|>"])
    return toks


TOKENIZERS = _tokenizers()


def _random_text(rng):
    kind = rng.random()
    if kind < 0.3:  # random bytes, as a corrupt input decodes
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(60)))
        return raw.decode("utf-8", "replace")
    if kind < 0.5:  # random scalars from the whole range
        return "".join(chr(c) for c in (rng.randrange(0x110000) for _ in range(rng.randrange(30)))
                       if not 0xD800 <= c <= 0xDFFF)
    return "".join(rng.choice(SEPARATORS) + rng.choice(WORDS) for _ in range(rng.randrange(1, 8)))


def _chunks(rng, text):
    cuts = sorted(rng.randrange(len(text) + 1) for _ in range(rng.randrange(5)))
    bounds = [0] + cuts + [len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


@pytest.mark.parametrize("name", TOKENIZERS)
def test_stream_equals_whole_on_random_input(name):
    tok = TOKENIZERS[name]
    rng = random.Random(f"{SEED}-{name}")
    texts = [_random_text(rng) for _ in range(CASES)]
    whole = tok.encode_batch(texts).to_pylist()
    for case, text in enumerate(texts):
        assert whole[case] == tok.encode(text), (name, case, ascii(text))
        stream = tok.stream()
        got = []
        for piece in _chunks(rng, text):
            got += stream.feed(piece)
        got += stream.finish()
        assert got == whole[case], (name, SEED, case, ascii(text))
