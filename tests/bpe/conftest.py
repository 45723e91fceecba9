"""What the BPE trainer's tests share (tests/bpe/test_bpe_train.py and its 32K sweep in
tests/parity/test_bpe_slow.py): the trainer held to HF ``BpeTrainer``. GPT-2's fixtures and
oracles (``gpt2``, ``hf_gpt2``, ``tiktoken_gpt2``) are tests/conftest.py's."""
from corpustok.bpe.train import train_from_counts
from tests.conftest import hf_bpe_train

SUBSTRATES = ("ube", "utf8", "utf16")  # the trainer's tests, in this order (their ids)


def assert_same_as_hf(counts, vocab_size, substrate, min_frequency=0, special_tokens=()):
    want = hf_bpe_train(counts, vocab_size, substrate, min_frequency, special_tokens)
    got = train_from_counts(counts, vocab_size, substrate, min_frequency, special_tokens)
    assert got[1] == want[1], (substrate, vocab_size, min_frequency, special_tokens)
    assert got[0] == want[0], (substrate, vocab_size, min_frequency, special_tokens)
    return got
