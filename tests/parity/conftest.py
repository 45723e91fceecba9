"""Helpers of the parity sweeps (tests/parity/): what more than one of its files reads."""
import json
import lzma

import pyarrow.parquet as pq
import pytest

from tests.conftest import SHARED_DATA, read_xz_text, shared_corpus_files

CORPUS_B_DOCS = 6000  # of corpus-b's first file, in the proofs (CI's time)


def corpus_b_texts():
    """The first CORPUS_B_DOCS documents of ../shared/data/corpus-b's first file (~45 MB of
    its 134); a skip when it is absent."""
    path = SHARED_DATA / "corpus-b" / "part-00000.parquet"
    if not path.is_file():
        pytest.skip("../shared/data/corpus-b is absent")
    return pq.read_table(path, columns=["text"]).column("text").to_pylist()[:CORPUS_B_DOCS]


def whole_corpus_batches(size=5000):
    """``(where, texts)``: every line of every shared-corpus file (line ends kept), then the
    text of every record of the UDHR in 532 languages (../shared/data/udhr), ``size`` at a
    time; a skip when ../shared/data is absent."""
    files = shared_corpus_files()
    udhr = SHARED_DATA / "udhr" / "udhr.jsonl.xz"
    if not files or not udhr.is_file():
        pytest.skip("the shared corpus and the UDHR are read from ../shared/data (absent here)")
    for f in files:
        lines = read_xz_text(f).splitlines(keepends=True)
        for k in range(0, len(lines), size):
            yield f"{f.name} line {k}", lines[k:k + size]
    with lzma.open(udhr, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    for k in range(0, len(texts), size):
        yield f"udhr record {k}", texts[k:k + size]


def assert_same_on_whole_corpus(first_difference, ours, theirs):
    """``first_difference(ours, theirs, texts)`` is None on every batch of
    :func:`whole_corpus_batches`, and those are all 491,328 texts (439,514 lines, 51,814
    UDHR records)."""
    compared = 0
    for where, texts in whole_corpus_batches():
        assert first_difference(ours, theirs, texts) is None, where
        compared += len(texts)
    assert compared == 491_328, compared
