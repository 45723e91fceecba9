"""pipeline/encode.py: BOS/EOS put around every document by one kernel call
(kernels/markers.py), against the plain definition written here; the kernels' outputs in
Arrow's pool."""
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

import corpustok
from corpustok.arrow import utf8_batch
from corpustok.kernels.markers import add_markers
from corpustok.pipeline import encode as encode_module
from corpustok.pipeline.encode import WARM_UP_TEXTS, _add_markers, encode_documents, warm_up
from tests.conftest import TEST_DATA


def with_markers(docs, bos, eos):
    """The definition: each document's ids with ``bos`` before and ``eos`` after."""
    return [([bos] if bos is not None else []) + d + ([eos] if eos is not None else [])
            for d in docs]


marker = st.none() | st.integers(0, 2**31 - 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**31 - 1), max_size=6), max_size=8), marker, marker)
def test_markers_around_every_document(docs, bos, eos):
    offsets = np.cumsum([0] + [len(d) for d in docs]).astype(np.int64)
    ids = np.array([i for d in docs for i in d], np.int32)
    out, out_offsets = _add_markers(ids, offsets, bos, eos)
    got = [out[out_offsets[k]:out_offsets[k + 1]].tolist() for k in range(len(docs))]
    assert got == with_markers(docs, bos, eos)
    assert out_offsets[-1] == len(out) and out_offsets[0] == 0


def test_read_only_arrow_ids_keep_one_signature():
    ids = np.arange(5, dtype=np.int32)
    ids.setflags(write=False)  # Arrow buffers are read-only
    out, offsets = _add_markers(ids, np.array([0, 2, 5], np.int64), 9, None)
    assert out.tolist() == [9, 0, 1, 9, 2, 3, 4] and offsets.tolist() == [0, 3, 7]


@pytest.fixture(scope="module", params=["gpt2", "bert-base-uncased/vocab.txt"])
def tok(request):
    return corpustok.load(TEST_DATA / request.param)


@pytest.mark.parametrize("threads", [1, 2])
def test_ids_are_written_into_arrows_pool(tok, threads):
    # The kernels' outputs come from Arrow's pool (decision 0046), whose pages the job's
    # jemalloc keeps for the next batch (test_workers.py), not from a fresh mapping per batch;
    # two threads' parts are joined there too.
    docs = pa.array([f"document {i}: " + "the quick brown fox jumps over the lazy dog " * 20
                     for i in range(2000)])
    before = pa.total_allocated_bytes()
    ids, offsets, *_ = encode_documents(tok, docs, threads=threads)
    held = pa.total_allocated_bytes() - before
    assert held >= 4 * len(ids)
    marked, _ = _add_markers(ids, offsets, 1, 2)
    grew = pa.total_allocated_bytes() - before - held  # its ids, padded to 64 bytes
    assert 4 * len(marked) <= grew < 4 * len(marked) + 64
    del ids, offsets, marked
    assert pa.total_allocated_bytes() - before < 1 << 16


LONG = "a long document, streamed " * 400


@pytest.mark.parametrize("texts", [
    ["a short one"] * 50 + [LONG] + ["last"],
    [LONG, "", "b", LONG + "x", LONG, "c c"],  # first, next to each other, an empty one
    ["a", LONG],  # last
    [LONG]])
def test_a_batch_with_long_documents_is_assembled_in_arrows_pool(tok, texts):
    # Documents past max_doc_bytes are streamed and the batch's ids put together again: in
    # the pool too, and the same ids and offsets as the batch call gives.
    docs = pa.array(texts)
    whole, whole_offsets = encode_documents(tok, docs)[:2]
    before = pa.total_allocated_bytes()
    ids, offsets = encode_documents(tok, docs, max_doc_bytes=1000)[:2]
    assert pa.total_allocated_bytes() - before >= 4 * len(ids)
    assert ids.tolist() == whole.tolist()
    assert offsets.tolist() == whole_offsets.tolist()


def test_markers_refuse_room_of_another_size():
    ids, offsets = np.arange(5, dtype=np.int32), np.array([0, 2, 5], np.int64)
    with pytest.raises(ValueError, match="exactly"):
        add_markers(ids, offsets, np.int64(9), np.int64(-1), np.empty(8, np.int32))


def test_a_batchs_ids_outlive_the_next_batch(tok):
    # Pool memory is handed out again once freed, never while an array of ids still holds it.
    first = tok.encode_arrays(utf8_batch(["one document", "and another one"]))[0]
    kept = first.tolist()
    for _ in range(3):
        tok.encode_arrays(utf8_batch(["something else entirely " * 50]))
    assert first.tolist() == kept == tok.encode_arrays(
        utf8_batch(["one document", "and another one"]))[0].tolist()


def test_warm_up_runs_the_batch_and_the_long_document_paths(tok, monkeypatch):
    # The warm-up compiles what a job runs: its first text goes through the batch call, its
    # second is past the long-document limit and is streamed (it was shorter once, and the
    # stream's kernels compiled in the middle of a job's first long document).
    streamed = []
    real = encode_module._stream_encode

    def spy(tok_, doc):
        streamed.append(bytes(doc))
        return real(tok_, doc)

    monkeypatch.setattr(encode_module, "_stream_encode", spy)
    warm_up(tok)
    assert streamed == [WARM_UP_TEXTS[1].encode()]
