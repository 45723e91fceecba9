"""SentencePiece models and SentencePiece-style ``tokenizer.json`` files on more text than the
default tests can read (marked slow: ./run_local.sh test -m slow): the first 6,000 documents of
corpus-b's first file through the BPE kernel (= ``sentencepiece`` 0.2.3) and the json files
(= HF ``tokenizers``), the first 2 MB of every shared-corpus file through the Unigram kernels
(= ``sentencepiece``). Each compares as its subject file does, with that file's ``pair`` and
``first_difference`` (tests/sentencepiece/test_sentencepiece_{bpe,hf_json,unigram}.py)."""
import pyarrow.parquet as pq
import pytest

from tests.conftest import SHARED_DATA, read_xz_text, shared_corpus_files
from tests.sentencepiece import test_sentencepiece_bpe as bpe
from tests.sentencepiece import test_sentencepiece_hf_json as hf_json
from tests.sentencepiece import test_sentencepiece_unigram as unigram
from tests.sentencepiece.conftest import SHARED_FILES

CORPUS_B_DOCS = 6000  # of corpus-b's first file, in the proofs (CI's time)


def corpus_b_texts():
    """The first CORPUS_B_DOCS documents of ../shared/data/corpus-b's first file (~45 MB of
    its 134); a skip when it is absent."""
    path = SHARED_DATA / "corpus-b" / "part-00000.parquet"
    if not path.is_file():
        pytest.skip("../shared/data/corpus-b is absent")
    return pq.read_table(path, columns=["text"]).column("text").to_pylist()[:CORPUS_B_DOCS]


@pytest.mark.slow
@pytest.mark.parametrize("name", [f"shared:{f}" for f in SHARED_FILES[:4]])
def test_whole_corpus_b_gives_sentencepiece_ids(name):
    """The first 6,000 documents of corpus-b's first file (~45 MB of its 134; CI's proofs
    have no more time), on the four distinct BPE models of ../shared (mistral-common's v1 and
    v2 are two of them byte for byte; its v3, v7 and v7m1 run the default tests' texts)."""
    ours, theirs = bpe.pair(name)
    texts = corpus_b_texts()
    for k in range(0, len(texts), 2000):
        assert bpe.first_difference(ours, theirs, texts[k:k + 2000]) is None


@pytest.mark.slow
@pytest.mark.parametrize("rel", hf_json.FILES)
def test_whole_corpus_b_gives_hf_ids(rel):
    """The first 6,000 documents of corpus-b's first file (~45 MB; all 17,926 of them matched
    too, 2026-12-05, 226 s for the three files: more than CI's proofs can spend)."""
    ours, theirs = hf_json.pair(rel)
    texts = corpus_b_texts()
    for k in range(0, len(texts), 2000):
        assert hf_json.first_difference(ours, theirs, texts[k:k + 2000]) is None


@pytest.mark.slow
@pytest.mark.parametrize("rel", unigram.FILES)
def test_whole_shared_corpus_sample(rel):
    """Unigram (T5, mT5, ALBERT): the first 2 MB of every shared-corpus file, line by line."""
    files = shared_corpus_files()
    if not files:
        pytest.skip("the shared corpus is read from ../shared/data (absent here)")
    ours, theirs, _ = unigram.pair(rel)
    lines = [t for f in files for t in read_xz_text(f, 2_000_000).splitlines(keepends=True)]
    assert unigram.first_difference(ours, theirs, lines) is None
