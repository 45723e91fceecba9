"""What the CUDA substrate codec's tests share (tests/core/test_cuda.py and its slow sweeps in
tests/parity/test_cuda_slow.py): the comparison with the CPU kernel and the reference, the
scalar-value documents, and the child pytest that runs a file's tests on Numba's CUDA
simulator (test_cuda.py's docstring says why a child)."""
import importlib.util
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from corpustok import reference
from corpustok.kernels import cuda as kc
from corpustok.kernels.substrate import UBE, UTF8, UTF16, encode_symbols
from tests.conftest import REPO

SUBSTRATES = {"utf8": UTF8, "utf16": UTF16, "ube": UBE}
SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
HERE = SIMULATOR or kc.cuda_available()  # can the kernels run in this process?
needs_kernels = pytest.mark.skipif(not HERE, reason="runs in the simulator child process")
BIG = (16, 256)  # few simulated threads per byte, for the larger batches
ALL_SCALARS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


# --- pure-Python reference ---------------------------------------------------------------
def ref_encode(docs, substrate):
    """:func:`corpustok.reference.encode_symbols` for a kernel substrate code."""
    return reference.encode_symbols(docs, {v: k for k, v in SUBSTRATES.items()}[substrate])


# --- helpers -----------------------------------------------------------------------------
def batch(docs):
    data = np.frombuffer(b"".join(docs), np.uint8)
    offsets = np.zeros(len(docs) + 1, np.int64)
    np.cumsum([len(d) for d in docs], out=offsets[1:])
    return data, offsets


def assert_same(docs, substrate, geometry, reference=False):
    """The CUDA kernels give exactly the CPU kernel's three arrays (and the reference's)."""
    data, offsets = batch(docs)
    got = kc.encode_symbols_cuda(data, offsets, substrate, *geometry)
    want = encode_symbols(data, offsets, substrate)
    assert [a.dtype for a in got] == [np.uint16, np.int64, np.int64]
    for name, g, w in zip(("symbols", "out_offsets", "replaced"), got, want):
        if not np.array_equal(g, w):
            k = int(np.flatnonzero(g[: len(w)] != w[: len(g)])[0]) if len(g) and len(w) else 0
            pytest.fail(f"{name} differ (lengths {len(g)}/{len(w)}), first at {k}: "
                        f"{g[k:k + 8]} vs {w[k:k + 8]}; substrate {substrate}, {geometry}")
    if reference:
        assert [list(a) for a in got] == [list(a) for a in ref_encode(docs, substrate)]


def scalar_docs(step):
    """Scalar values (every ``step``-th, plus every length boundary and the UBE second
    alphabet's PUA block) in documents cut at arbitrary byte positions (so some cuts split
    characters, which then read as invalid UTF-8 on both sides)."""
    keep = set(ALL_SCALARS[::step]) | {0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD,
                                       0xFFFF, 0x10000, 0x10FFFF} | set(range(0xE100, 0xE200))
    raw = "".join(chr(c) for c in sorted(keep)).encode()
    cuts = sorted(random.Random(step).sample(range(1, len(raw)), 6))
    return [raw[a:b] for a, b in zip([0] + cuts, cuts + [len(raw)])], len(keep)


def run_in_simulator(test_file, markexpr, workers=0):
    """The tests of ``test_file`` marked ``markexpr`` on the simulator, in a child pytest with
    ``workers`` processes (test by test)."""
    if importlib.util.find_spec("numba.cuda") is None:
        pytest.skip("numba.cuda (and its simulator) is not installed: pip install numba-cuda")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    spread = ["-n", str(workers), "--dist", "load"] if workers else ["-n", "0"]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *spread, "-m",
           markexpr, str(Path(test_file).resolve().relative_to(REPO))]
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stdout[-8000:]}\n{r.stderr[-3000:]}"
    assert " passed" in r.stdout
