"""SentencePiece-style BPE ``tokenizer.json`` files on more text than the default tests read
(marked slow): the first 6,000 documents of corpus-b's first file give HF ``tokenizers``' ids,
compared as tests/sentencepiece/test_sentencepiece_hf_json.py does."""
import pytest

from tests.parity.conftest import corpus_b_texts
from tests.sentencepiece import test_sentencepiece_hf_json as hf_json


@pytest.mark.slow
@pytest.mark.parametrize("rel", hf_json.FILES)
def test_whole_corpus_b_gives_hf_ids(rel):
    """The first 6,000 documents of corpus-b's first file (~45 MB; all 17,926 of them matched
    too, 2026-12-05, 226 s for the three files: more than CI's proofs can spend)."""
    ours, theirs = hf_json.pair(rel)
    texts = corpus_b_texts()
    for k in range(0, len(texts), 2000):
        assert hf_json.first_difference(ours, theirs, texts[k:k + 2000]) is None
