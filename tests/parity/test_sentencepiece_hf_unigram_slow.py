"""HF Unigram ``tokenizer.json`` files on more text than the default tests read (marked slow):
the first 3,000 documents of corpus-b's first file give HF ``tokenizers``' ids on T5's own json
and the json transformers' converter writes for T5 (``legacy`` true and false), mT5 and
ALBERT (its four do_lower_case/keep_accents shapes, decision 0039), compared as tests/sentencepiece/test_sentencepiece_hf_unigram.py does."""
import pytest

from tests.parity.conftest import corpus_b_texts
from tests.sentencepiece import test_sentencepiece_hf_unigram as hf_unigram

DOCS = 3000


@pytest.mark.slow
@pytest.mark.parametrize("name", hf_unigram.FILES)
def test_corpus_b_sweep_gives_hf_ids(name):
    """The first 3,000 documents of corpus-b's first file (81 s for the four T5/mT5 files)."""
    ours, theirs = hf_unigram.pair(name)
    texts = corpus_b_texts()[:DOCS]
    for k in range(0, len(texts), 1000):
        assert hf_unigram.first_difference(ours, theirs, texts[k:k + 1000]) is None
