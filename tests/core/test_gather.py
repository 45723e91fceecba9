"""``corpustok.gather.gather_ranges``: ranges of a flat array packed one after another by a
kernel, held to a readable reference (the ranges sliced and joined in Python); its output is
in Arrow's pool, a range outside the array is refused, and ``corpustok.arrow`` (which the packed
reader and the input readers import) still loads no Numba."""
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpustok.gather import gather_ranges


def reference(data, starts, lengths):
    """The ranges one by one, joined: what :func:`gather_ranges` gives."""
    parts = [bytes(data[s:s + n]) for s, n in zip(starts, lengths)]
    offsets = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    return b"".join(parts), offsets.tolist()


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300), picks=st.lists(st.tuples(st.integers(0, 300),
                                                              st.integers(0, 40)), max_size=30))
def test_ranges_equal_the_reference(data, picks):
    """Empty arrays, empty ranges, overlapping and repeated ranges, in any order."""
    arr = np.frombuffer(data, np.uint8)
    starts = [min(s, len(arr)) for s, _ in picks]
    lengths = [min(n, len(arr) - s) for s, (_, n) in zip(starts, picks)]
    packed, offsets = gather_ranges(arr, starts, lengths)
    want, want_offsets = reference(arr, starts, lengths)
    assert packed.tobytes() == want
    assert offsets.tolist() == want_offsets
    assert packed.dtype == np.uint8 and offsets.dtype == np.int64


@pytest.mark.parametrize("in_pool", [True, False])
def test_output_is_in_arrows_pool_when_asked_and_inputs_are_not_changed(in_pool):
    data = np.arange(256, dtype=np.uint8).repeat(64)  # writable, 16 KB
    kept = data.copy()
    before = pa.total_allocated_bytes()
    packed, _ = gather_ranges(data, [100, 0, 5000], [4000, 10, 6000], in_pool=in_pool)
    grew = pa.total_allocated_bytes() - before
    assert grew >= len(packed) == 10_010 if in_pool else grew == 0
    assert packed.tobytes() == data[100:4100].tobytes() + data[:10].tobytes() + \
        data[5000:11000].tobytes()
    assert np.array_equal(data, kept)
    assert packed.flags.writeable  # the caller's to use


@pytest.mark.parametrize("starts, lengths", [([0], [11]), ([-1], [2]), ([3], [-1]),
                                             ([0, 1], [1]), ([2 ** 63 - 1], [1])])
def test_ranges_outside_the_array_are_refused(starts, lengths):
    with pytest.raises(ValueError, match="gather_ranges"):
        gather_ranges(np.zeros(10, np.uint8), starts, lengths)


def test_corpustok_arrow_loads_no_numba():
    """The gather's kernel lives apart from ``corpustok.arrow``, which readers import."""
    code = "import sys, corpustok.arrow; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
