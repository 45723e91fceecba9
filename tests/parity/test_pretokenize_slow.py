"""The split kernel against the ``regex`` oracle (tests/pretokenize/conftest.py) on the whole
shared corpus and every UDHR record, for every named pre-tokenizer (marked slow: ./run_local.sh
test -m slow). The hypothesis and random-pattern checks are
tests/pretokenize/test_pretokenize.py."""
import json
import lzma

import numpy as np
import pytest

from tests.conftest import read_xz_text, shared_corpus_files
from tests.pretokenize.conftest import COMPILED, NAMES
from corpustok.pretokenize.patterns import split, split_arrays


# The shared corpus files by name; a placeholder when there are none, so that a shared folder
# without its corpus fails the sweep instead of leaving it an empty parameter set (a skip).
CORPUS_FILES = [p.name for p in shared_corpus_files()] or ["(no corpus files)"]


@pytest.mark.slow  # the check of the slow sweeps' inputs: it runs with them
def test_shared_corpus_files_are_all_there(shared_data):
    """The sweeps below take their files from ../shared/data/corpus at collection: all eight
    must be there (70.7 MB of text), or the sweeps would compare less than they say."""
    assert len(shared_corpus_files()) >= 8, shared_corpus_files()


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("file", CORPUS_FILES)
def test_shared_corpus_parity(shared_data, file, name):
    path = shared_data / "corpus" / file
    assert path.is_file(), f"{path}: no shared corpus file to compare"
    text = read_xz_text(path)
    raw = text.encode()
    data = np.frombuffer(raw, np.uint8)
    ends, _ = split_arrays(data, np.array([0, len(raw)], np.int64), name)
    starts = np.concatenate([[0], ends[:-1]])
    got = [raw[a:b].decode() for a, b in zip(starts.tolist(), ends.tolist())]
    want = COMPILED[name].findall(text)
    assert len(want) > 30_000, f"{path.name}: {len(want)} chunks"  # the smallest file: 35,121
    assert len(got) == len(want) and got == want, path.name


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_udhr_parity(shared_data, name):
    with lzma.open(shared_data / "udhr" / "udhr.jsonl.xz", "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    lines = [v for d in docs for v in d.values() if isinstance(v, str)]
    assert len(lines) > 450_000, len(lines)  # 466,326 strings in 51,814 records
    bad = [t for t in lines if split(t, name) != COMPILED[name].findall(t)]
    assert not bad, f"{len(bad)} mismatches, first {bad[0]!r}"
