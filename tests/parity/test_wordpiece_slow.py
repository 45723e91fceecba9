"""Long parity sweeps against HF ``tokenizers`` (run with ``-m slow``): every Unicode scalar
value and the whole shared corpus line by line, for each of the five option sets (CONFIGS)
docs/guarantees.md names."""
import pytest

from tests.conftest import read_xz_text, shared_corpus_files
from tests.wordpiece.test_wordpiece import CONFIGS, SCALARS, mismatches, sweep


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS)
def test_every_code_point(config):
    """Each of the 1,112,064 scalar values alone and between letters: 0 mismatches."""
    sweep(config, SCALARS)


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS)
def test_whole_shared_corpus(shared_data, config):
    """The whole shared corpus (70.7 MB, 439,514 lines in 8 files): 0 mismatches."""
    files = shared_corpus_files()
    assert len(files) >= 8, files
    compared = 0
    for path in files:
        lines = read_xz_text(path).splitlines()
        for k in range(0, len(lines), 200_000):
            bad = mismatches(config, lines[k:k + 200_000])
            assert not bad, (path.name, len(bad), [ascii(t[:80]) for t, _, _ in bad[:3]])
        compared += len(lines)
    assert compared > 430_000, compared
