"""BPE against its oracles on the whole shared corpus (marked slow: ./run_local.sh test -m
slow): GPT-2's files encode as HF ``ByteLevelBPETokenizer`` and tiktoken's ``gpt2`` do (every
line of the 8 files) and decode back. The default tests are tests/bpe/."""
import pytest

from tests.conftest import read_xz_text, shared_corpus_files, tiktoken_gpt2


@pytest.mark.slow
def test_gpt2_whole_shared_corpus(gpt2, hf_gpt2, shared_data):
    enc = tiktoken_gpt2()
    compared = 0
    for f in shared_corpus_files():
        lines = read_xz_text(f).splitlines(keepends=True)
        for k in range(0, len(lines), 20000):
            part = lines[k:k + 20000]
            ours = gpt2.encode_batch(part).to_pylist()
            assert ours == [e.ids for e in hf_gpt2.encode_batch(part)], f.name
            assert ours == enc.encode_ordinary_batch(part, num_threads=1), f.name
            assert gpt2.decode_batch(gpt2.encode_batch(part)) == part, f.name
            compared += len(part)
    assert compared > 430_000, compared  # the whole corpus: 439,514 lines in 8 files
