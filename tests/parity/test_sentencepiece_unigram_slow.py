"""SentencePiece Unigram models (T5, mT5, ALBERT) on more text than the default tests read
(marked slow): the first 2 MB of every shared-corpus file give ``sentencepiece``'s ids,
compared as tests/sentencepiece/test_sentencepiece_unigram.py does."""
import pytest

from tests.conftest import read_xz_text, shared_corpus_files
from tests.sentencepiece import test_sentencepiece_unigram as unigram


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
