"""SentencePiece ``.model`` files on every line of the shared corpus (8 files, ~71 MB) and every
record of the UDHR in 532 languages (../shared/data/udhr, 51,814 records): the ids of
``sentencepiece`` 0.2.3 on each, for the four distinct BPE models and the three Unigram models
of ../shared (marked slow). Compared as tests/sentencepiece/test_sentencepiece_bpe.py and
test_sentencepiece_unigram.py do (their ``pair`` and ``first_difference``)."""
import pytest

from tests.parity.conftest import whole_corpus_batches
from tests.sentencepiece import test_sentencepiece_bpe as bpe
from tests.sentencepiece import test_sentencepiece_unigram as unigram
from tests.sentencepiece.conftest import SHARED_FILES


@pytest.mark.slow
@pytest.mark.parametrize("name", [f"shared:{f}" for f in SHARED_FILES[:4]])
def test_bpe_models_give_sentencepiece_ids_on_every_line(name):
    ours, theirs = bpe.pair(name)
    compared = 0
    for where, texts in whole_corpus_batches():
        assert bpe.first_difference(ours, theirs, texts) is None, where
        compared += len(texts)
    assert compared == 491_328, compared  # 439,514 lines and 51,814 records


@pytest.mark.slow
@pytest.mark.parametrize("rel", unigram.FILES)
def test_unigram_models_give_sentencepiece_ids_on_every_line(rel):
    ours, theirs, _ = unigram.pair(rel)
    compared = 0
    for where, texts in whole_corpus_batches():
        assert unigram.first_difference(ours, theirs, texts) is None, where
        compared += len(texts)
    assert compared == 491_328, compared  # 439,514 lines and 51,814 records
