"""The CUDA substrate codec against the CPU kernel and Python's codecs.

No GPU is needed: the kernels run on numba's CUDA simulator. ``NUMBA_ENABLE_CUDASIM`` must be
set before ``numba.cuda`` is first imported and it changes ``numba.cuda`` for the whole
process, so an ordinary run leaves this process alone and re-runs this file in a child
process with the simulator on (``test_simulator``); the comparisons themselves run only where
the kernels can (the child, or a process that has a real GPU). The simulator runs each thread
as Python (~15 KB/s), so batches are small but cover every boundary case; the sweeps over all
1,112,064 scalar values and 15,122 shared-corpus lines are ``slow``, in
tests/parity/test_cuda_slow.py. What both files share (the comparison, the child pytest) is
tests/core/conftest.py.
"""
import importlib.util
import random

import numpy as np
import pytest
from tests.conftest import read_xz_text, shared_corpus_files
from tests.core.conftest import (BIG, HERE, SIMULATOR, SUBSTRATES, assert_same, batch,
                                 needs_kernels, run_in_simulator, scalar_docs)
from hypothesis import given, settings
from hypothesis import strategies as st

from corpustok.pipeline.jobs.demo import load_sample
from corpustok.kernels import cuda as kc
from corpustok.kernels.substrate import UBE, encode_symbols

# Small tiles put tile, thread and document boundaries everywhere; (256, 16) is the default.
GEOMETRIES = [(4, 3), (3, 7)]


INVALID = [
    b"\x80", b"\xbf\xbf\xbf\xbf", b"\xc0\xaf", b"\xc1\xbf", b"\xc2", b"\xc2A", b"\xdf\xc0",
    b"\xe0\x80\xaf", b"\xe0\xa0", b"\xe0\xa0A", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xef\xbf",
    b"\xf0\x80\x80\x80", b"\xf0\x90", b"\xf0\x90\x80", b"\xf0\x90\x80A", b"\xf4\x90\x80\x80",
    b"\xf4\x8f\xbf", b"\xf5\x80\x80\x80", b"\xfe\xff", b"\xff", b"a\xe2\x82", b"\xe2\x82\xac\x82",
    b"\xf0\x9f\x98\x80\x80\x80\x80", b"\xc3\xa9\xa9\xa9\xe2", b"\xf0\x9f\x98",
]


def edge_docs():
    """Empty documents everywhere, characters of every length cut by document ends, invalid
    UTF-8 of every kind, characters straddling every possible chunk boundary."""
    chars = ["a", "é", "€", "性", "\U0001f600", "\U0010ffff", "\ue100", "\ufffd", "\x7f"]
    docs = [b"", b""] + [c.encode() for c in chars] + [b""] + INVALID + [b"", b""]
    for shift in range(4):  # every alignment of multi-byte characters against tile ends
        docs.append(("x" * shift + "".join(chars)).encode())
    docs.append(b"".join(INVALID))
    docs.append("GPU性能".encode() + b"\xff" + "ĀāĂ".encode())
    return docs + [b""]


# --- tests that need no GPU stack --------------------------------------------------------
def test_geometry_limits():
    kc.check_geometry(256, 16)
    for threads, per_thread in [(0, 4), (4, 0), (256, 96), (1024, 16)]:
        with pytest.raises(ValueError, match="threads|tile"):
            kc.check_geometry(threads, per_thread)


def test_bad_offsets_rejected():
    data = np.frombuffer(b"abcdef", np.uint8)
    with pytest.raises(ValueError, match="document 1"):
        kc.encode_symbols_cuda(data, np.array([0, 4, 2, 6]), UBE)
    with pytest.raises(ValueError, match="outside"):
        kc.encode_symbols_cuda(data, np.array([0, 7]), UBE)
    with pytest.raises(ValueError, match="1-d"):
        kc.encode_symbols_cuda(data, np.array([], np.int64), UBE)


@pytest.mark.skipif(HERE, reason="the kernels run in this process")
def test_simulator():
    """Every comparison below, on numba's CUDA simulator in a child process."""
    run_in_simulator(__file__, "not slow")


def test_kernels_compile_for_hopper(monkeypatch):
    """The real CUDA compiler, stricter than the simulator, types and lowers every kernel to
    sm_90 PTX. Needs NVVM (``pip install numba-cuda[cu12]``), not a GPU; skips without it."""
    if SIMULATOR or importlib.util.find_spec("numba.cuda") is None:
        pytest.skip("needs the real numba.cuda target")
    from numba import cuda

    if getattr(cuda, "implementation", "") != "NVIDIA":
        pytest.skip("the built-in CUDA target needs a driver to compile device calls")
    from numba.cuda import dispatcher

    # Device functions are compiled for "the current device": pretend to have an H100/H200.
    hopper = type("Hopper", (), {"compute_capability": (9, 0)})()
    monkeypatch.setattr(dispatcher, "get_current_device", lambda: hopper)
    arrays = "uint8[::1], int64[::1], int64, uint16[::1], int64[::1]"
    signatures = [f"void({arrays}, int64[::1])", "void(int64[::1], int64[::1])",
                  f"void({arrays}, int64[::1], uint16[::1])"]
    for kernel, sig in zip(kc.kernels(), signatures):
        try:
            ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0))
        except ImportError as e:  # NvvmSupportError / CudaSupportError: no NVVM installed
            pytest.skip(f"no NVVM to compile with: {e}")
        assert ".target sm_90" in ptx and ".local" not in ptx  # no spills to local memory


# --- CUDA (or simulator) against the CPU kernel and the reference ------------------------
@needs_kernels
def test_simulator_reports_available():
    assert kc.cuda_available()


@needs_kernels
@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("substrate", SUBSTRATES.values(), ids=SUBSTRATES.keys())
def test_edge_batches(substrate, geometry):
    assert_same(edge_docs(), substrate, geometry, reference=True)


@needs_kernels
def test_default_geometry():
    docs = [d * 16 for d in edge_docs()]  # two tiles of the GPU default geometry
    for substrate in SUBSTRATES.values():
        assert_same(docs, substrate, (kc.THREADS, kc.PER_THREAD), reference=True)


@needs_kernels
def test_tiny_batches():
    """No bytes at all, and one byte per thread and per block (the finest geometry)."""
    for docs in ([], [b""], [b""] * 5):
        for substrate in SUBSTRATES.values():
            assert_same(docs, substrate, (2, 3), reference=True)
    docs = [b"", "é".encode(), b"", "\U0001f600".encode(), b"\xe2\x82", b"", b"A\xff"]
    for substrate in SUBSTRATES.values():
        assert_same(docs, substrate, (1, 1), reference=True)


@needs_kernels
def test_sliced_arrow_offsets():
    """An Arrow slice: int32 offsets that start past the start of the data buffer."""
    docs = [c.encode() for c in ["zz", "é€", "", "\U0001f600x", "\xff"]]
    data, offsets = batch(docs)
    got = kc.encode_symbols_cuda(data, offsets[2:].astype(np.int32), UBE, 2, 3)
    want = encode_symbols(data, offsets[2:].astype(np.int32), UBE)
    assert all(np.array_equal(g, w) for g, w in zip(got, want))


@needs_kernels
@pytest.mark.parametrize("substrate", SUBSTRATES.values(), ids=SUBSTRATES.keys())
def test_invalid_utf8_two_byte_sequences(substrate):
    """Every lead byte followed by every class of second byte, plus random byte soup."""
    seconds = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xF0,
               0xFF]
    docs = [bytes([a, b]) for a in range(0x80, 0x100) for b in seconds]
    rng = random.Random(5)
    alphabet = [0x41, 0x80, 0x9F, 0xA0, 0xBF, 0xC2, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]
    docs += [bytes(rng.choice(alphabet) for _ in range(rng.randrange(12))) for _ in range(150)]
    assert_same(docs, substrate, (8, 64), reference=True)


@needs_kernels
@settings(max_examples=20, deadline=None)
@given(
    docs=st.lists(
        st.one_of(
            st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=12)
            .map(lambda s: s.encode("utf-8", "surrogatepass")),  # surrogates: invalid UTF-8
            st.binary(max_size=8),
            st.text("a\xe9\u20ac\ue1ff\U0001f600", max_size=10).map(str.encode),
        ),
        max_size=12,
    ),
    substrate=st.sampled_from(sorted(SUBSTRATES.values())),
    geometry=st.sampled_from(GEOMETRIES),
)
def test_random_batches(docs, substrate, geometry):
    assert_same(docs, substrate, geometry, reference=True)


@needs_kernels
@pytest.mark.parametrize("substrate", SUBSTRATES.values(), ids=SUBSTRATES.keys())
def test_scalar_values_strided(substrate):
    docs, n = scalar_docs(97)
    assert n > 11_000
    assert_same(docs, substrate, BIG)


@needs_kernels
@pytest.mark.parametrize("substrate", SUBSTRATES.values(), ids=SUBSTRATES.keys())
def test_udhr_multilingual(substrate):
    """Article 1 in every 8th language of the embedded UDHR sample (~15 KB, many scripts)."""
    rows = load_sample()
    docs = [r["text"].encode() for r in rows if r["unit"].endswith("art01")][::8]
    assert len(docs) > 50 and any(len(d) > 2 * len(d.decode()) for d in docs)  # not just Latin
    assert_same(docs, substrate, BIG)


@needs_kernels
def test_shared_corpus_slices(shared_data):
    """The start of every shared corpus file, lines as documents (2 KB each)."""
    docs = [line.encode() for p in shared_corpus_files()
            for line in read_xz_text(p, 2048).splitlines(keepends=True)]
    assert len(docs) > 200, len(docs)  # 216 lines of the 8 files
    for substrate in SUBSTRATES.values():
        assert_same(docs, substrate, BIG)
