"""Helpers of the parity sweeps (tests/parity/): what more than one of its files reads."""
import pyarrow.parquet as pq
import pytest

from tests.conftest import SHARED_DATA

CORPUS_B_DOCS = 6000  # of corpus-b's first file, in the proofs (CI's time)


def corpus_b_texts():
    """The first CORPUS_B_DOCS documents of ../shared/data/corpus-b's first file (~45 MB of
    its 134); a skip when it is absent."""
    path = SHARED_DATA / "corpus-b" / "part-00000.parquet"
    if not path.is_file():
        pytest.skip("../shared/data/corpus-b is absent")
    return pq.read_table(path, columns=["text"]).column("text").to_pylist()[:CORPUS_B_DOCS]
