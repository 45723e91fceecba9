"""Rank files with very long tokens (issue: a 200 KB token took 41 s to load, a 10 MB one more
than 13 minutes, and SIGTERM waited for it).

Loading is linear in the file: the pairs tiktoken merges come from sorting the tokens
(``token_splits``), not from a lookup per cut, and a token that no pair makes is known to be
unmergeable without merging its symbols. The pairs are exactly those of a lookup per cut, and
the ids exactly tiktoken's."""
import base64
import json
import signal
import subprocess
import sys
import time

import numpy as np
import tiktoken
import tiktoken.load
from hypothesis import given, settings
from hypothesis import strategies as st

import corpustok
from tests.conftest import REPO, TEST_DATA
from corpustok.kernels.bpe.token_table import token_splits
from corpustok.pretokenize.patterns import PATTERNS

SAMPLE = (TEST_DATA / "bpe_sample.txt").read_bytes()


def rank_file(path, long_token, base=None):
    """A rank file: ``base``'s lines (default: the 256 bytes), then ``long_token`` ranked
    last."""
    head = base.read_bytes() if base else b"".join(
        base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256))
    rank = head.count(b"\n")
    path.write_bytes(head + base64.b64encode(long_token) + b" %d\n" % rank)
    return path


def text_of(size):
    """``size`` bytes of English text (the sample, repeated)."""
    return (SAMPLE * (size // len(SAMPLE) + 1))[:size]


# ---- the pairs ---------------------------------------------------------------------------
def every_cut(tokens, plain):
    """The pairs by trying every cut of every token: the rule token_splits must give."""
    ids = {t: i for i, t in enumerate(tokens) if plain[i] and t}
    out = []
    for i, t in enumerate(tokens):
        if plain[i]:
            out += [(ids[t[:k]], ids[t[k:]], i) for k in range(1, len(t))
                    if t[:k] in ids and t[k:] in ids]
    return out


tokens_st = st.lists(st.lists(st.integers(0, 3), max_size=9).map(tuple), min_size=1,
                     max_size=60, unique=True)


@given(tokens=tokens_st, data=st.data())
@settings(max_examples=300, deadline=None)
def test_token_splits_are_every_cut(tokens, data):
    """Small alphabets make prefix-dense vocabularies (a, aa, aaa...), where the sort and the
    prefix and suffix chains have the most to do; some tokens are not plain, some empty."""
    plain = np.array(data.draw(st.lists(st.booleans(), min_size=len(tokens),
                                        max_size=len(tokens))), bool)
    off = np.zeros(len(tokens) + 1, np.int64)
    np.cumsum([len(t) for t in tokens], out=off[1:])
    sym = np.array([s for t in tokens for s in t], np.uint16)
    left, right, merged = token_splits(sym, off, plain)
    assert list(zip(left.tolist(), right.tolist(), merged.tolist())) == every_cut(tokens, plain)


def test_token_splits_of_a_run_of_one_letter():
    """a, aa, ..., a^60: every token but "a" is cut at every place."""
    tokens = [(0,) * n for n in range(1, 61)]
    off = np.zeros(61, np.int64)
    np.cumsum(range(1, 61), out=off[1:])
    got = token_splits(np.zeros(off[-1], np.uint16), off, np.ones(60, bool))
    assert list(zip(*(a.tolist() for a in got))) == every_cut(tokens, np.ones(60, bool))


# ---- loading -----------------------------------------------------------------------------
def test_long_token_ids_equal_tiktoken(tmp_path):
    path = rank_file(tmp_path / "long.tiktoken", text_of(200_000), TEST_DATA / "gpt2_4k.tiktoken")
    ours = corpustok.load(path, pretokenizer="gpt2")
    ref = tiktoken.Encoding("long", pat_str=PATTERNS["gpt2"], special_tokens={},
                            mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(path)))
    long = text_of(200_000).decode()
    for text in ("hello world", long, long[:100_000], "a" * 5000, long[:-1] + "!"):
        assert ours.encode(text) == ref.encode_ordinary(text)
    assert ours.decode([4000]) == long


LOAD_TIMES = """
import json, sys, time
import corpustok
corpustok.load(sys.argv[1], pretokenizer="gpt2")  # compiled kernels loaded
times = []
for path in sys.argv[1:]:
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        corpustok.load(path, pretokenizer="gpt2")
        best = min(best, time.perf_counter() - t)
    times.append(best)
print(json.dumps(times))
"""


def test_long_token_load_is_linear(tmp_path):
    """A 2 MB token loads in about 10 times the time of a 200 KB one (a lookup per cut: 100
    times, 41 s and more than an hour). Measured in a child process (its own memory, and a
    bounded wait should a change make it quadratic again)."""
    small = rank_file(tmp_path / "small.tiktoken", b"a" * 200_000)
    large = rank_file(tmp_path / "large.tiktoken", b"a" * 2_000_000)
    text = rank_file(tmp_path / "text.tiktoken", text_of(2_000_000),
                     TEST_DATA / "gpt2_4k.tiktoken")  # a token that merges make reach
    out = subprocess.run([sys.executable, "-c", LOAD_TIMES, str(small), str(large), str(text)],
                         capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr
    t_small, t_large, t_text = json.loads(out.stdout)
    assert t_large < 30 * t_small, (t_small, t_large)
    assert t_text < 30 * t_small + 1, (t_small, t_text)


ENCODE = """
import sys
import corpustok
from corpustok.pipeline.cli import main

load = corpustok.load


def loading(*args, **kwargs):  # says when the load begins
    print("loading", file=sys.stderr, flush=True)
    return load(*args, **kwargs)


corpustok.load = loading
sys.exit(main(sys.argv[1:], handle_signals=True))  # as the console script
"""


def test_sigterm_during_a_long_token_load_ends_the_process(tmp_path):
    """``corpustok encode`` with a rank file holding a 2 MB token, SIGTERM a second after the
    load began: the process ends within seconds, with the CLI's one line if the load had not
    ended (a lookup per cut held the main thread, and so the signal handler, for hours)."""
    path = rank_file(tmp_path / "big.tiktoken", b"a" * 2_000_000)
    proc = subprocess.Popen([sys.executable, "-c", ENCODE, "encode", "--tokenizer", str(path),
                             "--pretokenizer", "gpt2", "x"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert proc.stderr.readline() == "loading\n"
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError("SIGTERM did not end the process in 30 s") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert time.monotonic() - sent < 5
    if proc.returncode == -signal.SIGTERM:  # the load and encode were done (warm Numba cache)
        assert out.strip(), err  # and the signal came during interpreter shutdown: default
        return                   # handling then, after the work was complete
    assert proc.returncode in (0, 128 + signal.SIGTERM), err
    if proc.returncode:
        assert err.strip().splitlines() == ["corpustok encode: interrupted (SIGTERM); rerun "
                                            "the same command to resume"]
