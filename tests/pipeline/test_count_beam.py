"""CountChunks on Beam's in-memory FnApiRunner equals the in-process count_chunks."""
import apache_beam as beam
import pyarrow as pa
import pytest
from apache_beam.testing.util import assert_that, equal_to

from corpustok.bpe.train import ChunkCounts, count_chunks, train_from_counts
from corpustok.pipeline.jobs.count import ChunkCountFn, CountChunks
from corpustok.pipeline.jobs.demo import load_sample


@pytest.fixture(scope="module")
def texts():
    return [r["text"] for r in load_sample()[:400]] + [None, "", "it's  a\r\n test"]


def batches(texts):
    """Mixed element kinds: tables, Arrow arrays and lists of str."""
    out = []
    for k, i in enumerate(range(0, len(texts), 37)):
        part = texts[i:i + 37]
        if k % 3 == 0:
            out.append(pa.table({"id": list(range(len(part))), "text": part}))
        elif k % 3 == 1:
            out.append(pa.array(part, pa.large_string()))
        else:
            out.append(part)
    return out


def test_combine_globally_equals_count_chunks(texts):
    want = count_chunks(texts).to_dict()
    with beam.Pipeline(runner="FnApiRunner") as p:
        counts = p | beam.Create(batches(texts), reshuffle=False) | CountChunks()
        assert_that(counts | beam.Map(lambda c: c.to_dict()), equal_to([want]))


def test_per_chunk_equals_count_chunks(texts):
    want = count_chunks(texts).to_dict()
    with beam.Pipeline(runner="FnApiRunner") as p:
        pairs = p | beam.Create(batches(texts), reshuffle=False) | CountChunks(per_chunk=True)
        assert_that(pairs, equal_to(list(want.items())))


def test_combine_fn_merge_and_training(texts):
    fn = ChunkCountFn()
    parts = [fn.add_input(fn.create_accumulator(), b) for b in batches(texts)]
    merged = fn.extract_output(fn.merge_accumulators(parts))
    assert merged.to_dict() == count_chunks(texts).to_dict()
    assert train_from_counts(merged, 800, "ube") == train_from_counts(count_chunks(texts), 800,
                                                                      "ube")


def test_missing_text_column():
    with pytest.raises(ValueError, match="text_column"):
        ChunkCountFn(text_column="body").add_input(ChunkCounts(), pa.table({"text": ["a"]}))
