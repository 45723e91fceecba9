"""The BPE trainer against HF ``BpeTrainer`` on more text than the default tests read (marked
slow): the 32K vocabulary and merges on 600 KB of each shared-corpus file, every substrate. A
file apart from test_bpe_slow.py so that the proofs' workers (one file each) run both."""
import pytest

from tests.bpe.conftest import SUBSTRATES, assert_same_as_hf
from tests.conftest import read_xz_text, shared_corpus_files
from corpustok.bpe.train import count_chunks


@pytest.mark.slow
@pytest.mark.parametrize("substrate", SUBSTRATES)
def test_hf_parity_32k_few_mb(shared_data, substrate):
    texts = [read_xz_text(p, 600_000) for p in shared_corpus_files()]
    counts = count_chunks(texts).to_dict()
    vocab, merges = assert_same_as_hf(counts, 32000, substrate)
    assert len(vocab) == 32000
