"""pipeline/encode.py: BOS/EOS put around every document by one kernel call
(kernels/markers.py), against the plain definition written here."""
import numpy as np
from hypothesis import given, settings, strategies as st

from corpustok.pipeline.encode import _add_markers


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
