"""Shared test fixtures.

Tests may read the shared data folder (``../shared/data`` beside the repository) when it
exists; anything the default suite needs without it ships in ``tests/data``.
"""
import json
import lzma
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TEST_DATA = REPO / "tests" / "data"
SHARED_DATA = REPO.parent / "shared" / "data"


def shard_files(folder):
    """The shard files of a tokenize output folder, relative to it (``data/<name>.parquet``),
    sorted."""
    data = Path(folder) / "data"
    return sorted(f"data/{p.name}" for p in data.iterdir()) if data.is_dir() else []


def shared_corpus_files():
    """The shared corpus ``*.txt.xz`` files, or [] when ../shared/data is absent."""
    return sorted((SHARED_DATA / "corpus").glob("*.txt.xz")) if SHARED_DATA.is_dir() else []


def read_xz_text(path, max_bytes=None):
    """Decompressed text of an ``.xz`` file, cut at ``max_bytes`` on a line boundary."""
    with lzma.open(path, "rb") as f:
        raw = f.read() if max_bytes is None else f.read(max_bytes)
    if max_bytes is not None and len(raw) == max_bytes:
        raw = raw[: raw.rfind(b"\n") + 1]
    return raw.decode("utf-8")


@pytest.fixture(scope="session")
def shared_data():
    """Path of ../shared/data; skips the test when it is absent (fresh clone elsewhere)."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED_DATA


def hf_bpe_train(counts, vocab_size, substrate="ube", min_frequency=0, special_tokens=()):
    """The trainer's reference: HF ``BpeTrainer`` (no normalizer, no pre-tokenizer,
    ``initial_alphabet`` = the substrate's symbols) on chunks mapped to symbol strings, each
    fed ``count`` times. ``counts``: chunk text -> count. Returns ``(vocab, merges)``."""
    from tokenizers import Tokenizer, models, trainers

    from corpustok.ube import alphabet, to_symbols
    tok = Tokenizer(models.BPE())
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=list(special_tokens),
                                  initial_alphabet=alphabet(substrate), show_progress=False)
    words = [(to_symbols(chunk, substrate), c) for chunk, c in counts.items()]
    tok.train_from_iterator((w for w, c in words for _ in range(c)), trainer)
    model = json.loads(tok.to_str())["model"]
    return model["vocab"], [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
                            for m in model["merges"]]


@pytest.fixture(scope="session")
def gpt2_file(tmp_path_factory):
    """GPT-2's HF files (tests/data/gpt2) as a corpustok tokenizer file."""
    from corpustok import BytePairTokenizer
    gpt2 = TEST_DATA / "gpt2"
    path = str(tmp_path_factory.mktemp("tok") / "gpt2.json")
    BytePairTokenizer.from_hf(gpt2 / "vocab.json", gpt2 / "merges.txt").save(path)
    return path
