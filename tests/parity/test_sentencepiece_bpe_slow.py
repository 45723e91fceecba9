"""SentencePiece BPE models on more text than the default tests read (marked slow:
./run_local.sh test -m slow): the first 6,000 documents of corpus-b's first file through the
BPE kernel give ``sentencepiece`` 0.2.3's ids, compared as tests/sentencepiece/
test_sentencepiece_bpe.py does (its ``pair`` and ``first_difference``). A file of its own so
that the proofs' workers (one file each) run the SentencePiece sweeps side by side."""
import pytest

from tests.parity.conftest import corpus_b_texts
from tests.sentencepiece import test_sentencepiece_bpe as bpe
from tests.sentencepiece.conftest import SHARED_FILES


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
