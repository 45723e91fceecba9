"""The CUDA substrate codec's slow sweeps (marked slow: ./run_local.sh test -m slow): all
1,112,064 scalar values of the three substrates, and 15,122 shared-corpus lines, give the CPU
kernel's arrays. Without a GPU they run on Numba's CUDA simulator in a child pytest of two
processes (``test_simulator_slow``; tests/core/test_cuda.py says why a child); with one, in
this process. The default tests are tests/core/test_cuda.py."""
import pytest

from tests.conftest import read_xz_text, shared_corpus_files
from tests.core.conftest import (BIG, HERE, SUBSTRATES, assert_same, needs_kernels,
                                 run_in_simulator, scalar_docs)


@pytest.mark.slow
@pytest.mark.skipif(HERE, reason="the kernels run in this process")
def test_simulator_slow():
    """The slow sweeps (every scalar, one substrate a test, ~5 min each on the simulator)
    spread over two processes: alone on one worker they were 20 of the proofs' 38 minutes."""
    run_in_simulator(__file__, "slow", workers=2)


@needs_kernels
@pytest.mark.slow
@pytest.mark.parametrize("substrate", SUBSTRATES.values(), ids=SUBSTRATES.keys())
def test_every_scalar_value(substrate):
    """All 1,112,064 scalar values (4.3 MB of UTF-8) in seven documents: ~5 min each."""
    docs, n = scalar_docs(1)
    assert n == 1_112_064
    assert_same(docs, substrate, BIG)


@needs_kernels
@pytest.mark.slow
def test_shared_corpus_large_slices(shared_data):
    docs = [line.encode() for p in shared_corpus_files()
            for line in read_xz_text(p, 200_000).splitlines(keepends=True)]
    assert len(docs) > 15_000, len(docs)  # 15,122 lines
    for substrate in SUBSTRATES.values():
        assert_same(docs, substrate, BIG)
