"""What a new user meets on the command line: the progress line (read through a
pseudo-terminal), start-up reported apart from throughput, quiet workers, ``--version``,
vocab.txt casing, ``--workers`` default and warning, repeated options refused, and a quiet
``./run_local.sh`` set-up."""
import fcntl
import io
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpustok.pipeline.cli import commands
from corpustok.pipeline.cli import main
from corpustok.pipeline.cli.args import build_parser
from corpustok.pipeline.jobs import tokenize as run
from corpustok.pipeline.read import units as read
from corpustok.pipeline.read.jsonl import read_jsonl
from corpustok.pipeline.read.spec import ReadSpec
from corpustok.pipeline.runtime import progress
from corpustok.pipeline.runtime.workers import available_cores, default_workers
from corpustok.wordpiece.tokenizer import WordPiece, cased_token
from tests.conftest import REPO, TEST_DATA, shard_files

BERT_VOCAB = str(TEST_DATA / "bert-base-uncased" / "vocab.txt")
BERT_JSON = str(TEST_DATA / "bert-base-uncased" / "tokenizer.json")
CASED = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "Hello", "hello", "world", "World",
         "##s", ",", "!"]


def _jsonl(path, n, text="Hello world, this is a line of text! "):
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "text": text * 3}) + "\n")
    return str(path)


def _in_pty(argv, columns=120, timeout=120):
    """Run ``argv`` with a pseudo-terminal as stdin/stdout/stderr; ``(exit code, output)``."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a terminal of a real size, as a user's
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
        os.execv(argv[0], argv)
    out = b""
    while True:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            os.kill(pid, 9)
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "corpustok.pipeline.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=180)


# ------------------------------------------------------------------ progress (item 4, 6)

def test_progress_line_in_a_terminal_shows_bytes_of_total_rate_and_shards(tmp_path):
    src = _jsonl(tmp_path / "c.jsonl", 2000)
    size = os.path.getsize(src)
    code, out = _in_pty([sys.executable, "-m", "corpustok.pipeline.cli", "tokenize", src,
                         "--tokenizer", BERT_VOCAB, "--out", str(tmp_path / "o"),
                         "--workers", "2", "--local-mode", "processes"])  # a start-up of
    # seconds (worker processes), in which the line says what it waits for
    assert code == 0, out
    frames = [f for f in re.split(r"[\r\n]+", out) if "tokenize:" in f]
    assert frames, out
    last = frames[-1]
    from tqdm import tqdm
    total = tqdm.format_sizeof(size, divisor=1000)  # the inputs' size, as tqdm writes it
    assert "100%" in last and f"{total}/{total}" in last, last  # bytes of the inputs' size
    assert re.search(r"[\d.]+[kMG]?B/s", last), last  # rate
    assert "1 shard, 2,000 docs" in last, last
    assert re.search(r"\[\d\d:\d\d<\d\d:\d\d", out), out  # elapsed < ETA
    assert "starting (output folder, Beam, workers)" in out, out
    # the command's whole wall time: Python's start and imports first (Linux: /proc)
    starting = r"[\d.]+ s starting \(Python, imports\), " if sys.platform == "linux" else ""
    assert re.search(r"time +[\d.]+ s: " + starting +
                     r"[\d.]+ s preparing \(inputs, tokenizer\), [\d.]+ s "
                     r"start-up \(output folder, Beam, workers\), then [\d.]+ MB of text in "
                     r"[\d.]+ s \([\d.]+ MB/s, [\d,]+ tokens/s", out), out
    for noise in ("apitools", "Logging handler", "semi_persistent"):
        assert noise not in out


class _Terminal:
    """A stream that says it is a terminal (of no size), collecting what is written."""

    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_progress_moves_within_a_shard(tmp_path, monkeypatch):
    """The readers report as they read, so one shard (the whole input) moves the bar."""
    src = _jsonl(tmp_path / "big.jsonl", 4000)  # ~0.5 MB: several 256 KB reads
    out = tmp_path / "o"
    out.mkdir()
    reports = []
    term = _Terminal()
    with progress.Progress(str(out), [src], stream=term) as p:
        batches = read_jsonl(src, ReadSpec(), on_bytes=progress.report)
        with open(os.environ[progress.ENV], "rb") as channel:
            first = next(batches)  # the one shard, read whole
            reports = channel.read().splitlines()
    assert first.stop == 4000
    assert len(reports) >= 2  # more than one report inside the shard
    assert p.read_bytes == os.path.getsize(src)
    assert p.first_read is not None
    assert "100%" in term.text
    assert progress.ENV not in os.environ  # the channel ends with the block


def test_a_shard_in_hand_counts_half_until_it_is_written(tmp_path):
    with progress.Progress(str(tmp_path), [], show=False, stream=io.StringIO()) as p:
        progress.report(1000)  # read, being tokenized
        p._poll()
        assert p.done_bytes() == 500
        progress.shard_written()
        progress.report(200)  # the next shard's first read
        p._poll()
        assert (p.written_bytes, p.done_bytes()) == (1000, 1100)
    assert p.done_bytes(final=True) == p.read_bytes == 1200


def test_worker_threads_swap_the_progress_channel_once(tmp_path, monkeypatch):
    """Worker threads of one process (local mode threads) share one channel fd. When a new job
    names a new channel, one thread closes the old fd and opens the new one: a second close of
    the old number once closed an input another thread had just opened under it (the run
    failed with EBADF), and a write through it could have put a progress line in a shard."""
    import threading
    import time
    import types
    opened, closed, failures = [], [], []

    def slow_close(fd):  # widens the window between the check and the swap
        closed.append(fd)
        time.sleep(0.05)
        os.close(fd)

    def recorded_open(*args):
        fd = os.open(*args)
        opened.append(fd)
        return fd

    recording = types.SimpleNamespace(**{k: getattr(os, k) for k in dir(os) if k[0] != "_"})
    recording.close, recording.open = slow_close, recorded_open
    monkeypatch.setattr(progress, "os", recording)
    monkeypatch.setattr(progress, "_channel", [None, -1])
    old, new = tmp_path / "old", tmp_path / "new"
    old.touch()
    new.touch()
    monkeypatch.setenv(progress.ENV, str(old))
    progress.report(1)  # the previous job's channel, left open
    monkeypatch.setenv(progress.ENV, str(new))
    start = threading.Barrier(8)

    def reader():
        start.wait()
        try:
            progress.report(2)
        except OSError as e:
            failures.append(e)

    threads = [threading.Thread(target=reader) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    progress.os.close(progress._channel[1])
    assert failures == []
    assert len(opened) == 2 and closed == opened  # one thread swapped; each fd closed once
    assert len(old.read_bytes().splitlines()) == 1
    assert [line.split()[:2] for line in new.read_bytes().splitlines()] == [[b"R", b"2"]] * 8


def test_parquet_rows_report_their_share_of_the_file(tmp_path, monkeypatch):
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"id": list(range(3000)), "text": ["some text"] * 3000}), path,
                   row_group_size=1000)
    with progress.Progress(str(tmp_path), [str(path)], show=False) as p:
        shards = list(read.read_documents(str(path), shard_rows=250,
                                          on_bytes=progress.reporter()))
    assert len(shards) > 3
    assert abs(p.read_bytes - os.path.getsize(path)) <= len(shards) + 3  # int rounding only


def test_startup_and_compiling_are_reported_apart_from_throughput():
    manifest = {"totals": {}, "shards": [{"shard": "s", "tokens": 600_000}]}
    times = run.RunTimes(total=70.0, preparing=0.5, compiling=60.0, startup=8.0,
                         stored_bytes=1_000_000)
    r = run.RunResult(manifest, {}, seconds=70.0, startup=8.0, times=times)
    assert run._time_line(r, 3_000_000) == (
        "  time       70.0 s: 0.5 s preparing (inputs, tokenizer), 60.0 s compiling the "
        "kernels (first run only), 8.0 s start-up (output folder, Beam, workers), then 3.00 MB "
        "of text in 1.5 s (2.0 MB/s, 400,000 tokens/s; 0.7 MB/s of input as stored)")
    r.times = run.RunTimes(total=10.0, preparing=0.5, compiling=0.2, startup=8.0,
                           stored_bytes=3_000_000)  # cached kernels: no compile step named
    assert run._time_line(r, 3_000_000) == (
        "  time       10.0 s: 0.5 s preparing (inputs, tokenizer), 8.0 s start-up (output "
        "folder, Beam, workers), then 3.00 MB of text in 1.3 s (2.3 MB/s, 461,538 tokens/s)")
    # the console script: the process's start and imports before the job, counted
    r.times.starting = 1.5
    assert run._time_line(r, 3_000_000) == (
        "  time       11.5 s: 1.5 s starting (Python, imports), 0.5 s preparing (inputs, "
        "tokenizer), 8.0 s start-up (output folder, Beam, workers), then 3.00 MB of text in "
        "1.3 s (2.3 MB/s, 461,538 tokens/s)")
    r.times.startup = None  # a remote runner: no channel, no start-up known
    assert run._time_line(r, 3_000_000) == "  time       11.5 s, Beam start-up included"
    r.times.starting = 0.0  # the Python API: the job's own time only
    assert run._time_line(r, 3_000_000) == "  time       10.0 s, Beam start-up included"


def test_fewer_shards_than_cores_suggests_a_smaller_shard_mb(monkeypatch):
    monkeypatch.setattr(run, "available_cores", lambda: 4)
    assert "--shard-mb 7.2 gives every core a shard" in run._shard_hint(1, 29_000_000)
    assert run._shard_hint(4, 29_000_000) is None
    assert run._shard_hint(1, 500_000) is None  # start-up would outweigh the gain


# ------------------------------------------------------------------ quiet workers (item 5)

def test_train_and_main_send_worker_output_to_a_log_unless_verbose(tmp_path, monkeypatch):
    """(``tokenize --workers 2`` end to end: the terminal test above.)"""
    import corpustok.pipeline.jobs.main as main_job
    import corpustok.pipeline.jobs.train as train
    logs = []

    def fake(*args, worker_log=None, **kw):
        logs.append(worker_log)
        raise ValueError("stop here")
    monkeypatch.setattr(train, "train", fake)
    monkeypatch.setattr(main_job, "run_main", fake)
    src = _jsonl(tmp_path / "c.jsonl", 5)
    train_args = ["train", src, "--vocab-size", "300", "--out", str(tmp_path / "t.json"),
                  "--workers", "2", "--local-mode", "processes"]
    main_args = ["main", "--out", str(tmp_path / "m"), "--workers", "2", "--local-mode",
                 "processes"]
    assert main(train_args) == 2
    assert main(train_args + ["--verbose"]) == 2
    assert main(main_args) == 2
    assert main(main_args + ["-v"]) == 2
    assert main(train_args[:-2]) == 2  # threads (the default): no worker processes, no log
    assert [log is None for log in logs] == [False, True, False, True, True]
    assert not any(os.path.exists(log) for log in logs if log)  # removed after the run


# ------------------------------------------------------------------ --version (item 8)

def test_version():
    import corpustok
    p = _cli("--version")
    assert p.returncode == 0
    assert p.stdout.strip() == f"corpustok {corpustok.__version__}"


# ------------------------------------------------------------------ casing (item 10)

def test_cased_token_detects_a_cased_vocabulary():
    assert cased_token(CASED) == "Hello"
    uncased = [t for t in open(BERT_VOCAB, encoding="utf-8").read().split("\n") if t]
    assert cased_token(uncased) is None  # only [PAD], [UNK], ... are upper-case
    assert WordPiece.from_vocab(BERT_VOCAB).options["lowercase"] is True


def test_cased_vocab_txt_keeps_the_case_says_so_and_matches_hf(tmp_path, capsys):
    from tokenizers import BertWordPieceTokenizer
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(CASED) + "\n", encoding="utf-8")
    text = "Hello world, hello World!"
    assert main(["encode", "--tokenizer", str(vocab), text]) == 0
    got = capsys.readouterr()
    hf = BertWordPieceTokenizer(str(vocab), lowercase=False, strip_accents=False)
    assert got.out.split() == [str(i) for i in hf.encode(text, add_special_tokens=False).ids]
    assert "keeps the case of the text (the vocabulary holds upper-case tokens such as " \
           "'Hello'" in got.err
    assert main(["encode", "--tokenizer", str(vocab), "--lowercase", text]) == 0
    got = capsys.readouterr()
    hf = BertWordPieceTokenizer(str(vocab), lowercase=True)
    assert got.out.split() == [str(i) for i in hf.encode(text, add_special_tokens=False).ids]
    assert "lower-cases the text (--lowercase)" in got.err
    assert main(["encode", "--tokenizer", BERT_JSON, "--no-lowercase", "x"]) == 2
    assert "sets its own casing" in capsys.readouterr().err


def test_casing_is_part_of_the_job(tmp_path, capsys):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(CASED) + "\n", encoding="utf-8")
    src = _jsonl(tmp_path / "c.jsonl", 20, "Hello World! ")
    out = str(tmp_path / "o")
    base = ["tokenize", src, "--tokenizer", str(vocab), "--out", out, "--no-progress",
            "--workers", "1"]
    assert main(base) == 0  # detected: cased
    shard = shard_files(out)[0]
    assert pq.read_table(os.path.join(out, shard)).column("tokens")[0].as_py()[:2] == [5, 8]
    capsys.readouterr()
    assert main(base + ["--no-lowercase"]) == 0  # the same choice given: the same job
    assert "1 already complete" in capsys.readouterr().out
    assert main(base + ["--lowercase"]) == 2  # the other casing is another job
    capsys.readouterr()


# ------------------------------------------------------------------ --workers (item 11)

def test_default_workers_follow_the_cores_and_the_shards():
    assert available_cores() == len(os.sched_getaffinity(0))
    assert default_workers([29_000_000], 64_000_000, cores=2) == 1  # one shard: in-process
    assert default_workers([29_000_000, 100_000_000], 64_000_000, cores=2) == 2
    assert default_workers([10 ** 9], 64_000_000, cores=8) == 8
    assert default_workers([], 64_000_000, cores=8) == 1


def test_workers_above_the_cores_warn_and_the_default_is_chosen(tmp_path, capsys,
                                                                monkeypatch):
    src = _jsonl(tmp_path / "c.jsonl", 5)
    seen = {}

    def fake_tokenize(*args, workers=None, **kw):
        seen["workers"] = workers
        raise ValueError("stop here")
    monkeypatch.setattr(run, "tokenize", fake_tokenize)
    monkeypatch.setattr(commands, "available_cores", lambda: 2)
    base = ["tokenize", src, "--tokenizer", BERT_VOCAB, "--out", str(tmp_path / "o")]
    assert main(base + ["--workers", "64"]) == 2
    assert seen["workers"] == 64
    assert "--workers 64 is more than the 2 core(s)" in capsys.readouterr().err
    assert main(base + ["--shard-mb", "0.0001"]) == 2  # several shards: one per core
    assert seen["workers"] == 2
    assert main(base) == 2  # one shard: one in-process worker
    assert seen["workers"] == 1
    assert "more than" not in capsys.readouterr().err


# ------------------------------------------------------------------ repeats (item 13)

@pytest.mark.parametrize("argv", [
    ["tokenize", "x.jsonl", "--tokenizer", "a", "--tokenizer", "b", "--out", "o"],
    ["tokenize", "x.jsonl", "--tokenizer", "a", "--out", "o", "-o", "p"],
    ["tokenize", "x.jsonl", "--tokenizer", "a", "--out", "o", "--shard-mb", "1",
     "--shard-mb", "2"],
    ["tokenize", "x.jsonl", "--tokenizer", "a", "--out", "o", "--lowercase",
     "--no-lowercase"],
    ["tokenize", "x.jsonl", "--tokenizer", "a", "--out", "o", "--rejects", "--rejects"],
    ["encode", "--tokenizer", "a", "--tokenizer", "b", "x"],
    ["train", "x.jsonl", "--vocab-size", "300", "--vocab-size", "400", "--out", "t"],
])
def test_a_single_valued_option_given_twice_is_refused(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "given twice" in err and "it takes one value" in err


def test_collecting_options_repeat_freely():
    args, _ = build_parser().parse_known_args(
        ["train", "x.jsonl", "--vocab-size", "300", "--out", "t", "--special-token", "<a>",
         "--special-token", "<b>"])
    assert args.special_tokens == ["<a>", "<b>"]


def test_repeat_is_refused_as_a_user_runs_it():
    p = _cli("encode", "--tokenizer", BERT_VOCAB, "--tokenizer", BERT_JSON, "x")
    assert p.returncode == 2
    assert f"--tokenizer {BERT_VOCAB} and --tokenizer {BERT_JSON}" in p.stderr


# ------------------------------------------------------------------ run_local.sh (item 7)

NOISY_PIP = """#!/usr/bin/env bash
echo "Obtaining file:///somewhere"
echo "********************************************************************************"
echo "        !! editable install: SetuptoolsDeprecationWarning ... !!"
echo "********************************************************************************" >&2
exit "${FAIL_PIP:-0}"
"""


@pytest.mark.parametrize("fail", [False, True])
def test_run_local_set_up_is_quiet_unless_it_fails(tmp_path, fail):
    for name in ("run_local.sh", "setup.py", "pyproject.toml"):
        shutil.copy(REPO / name, tmp_path / name)
    bin_ = tmp_path / ".venv" / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "python").write_text(NOISY_PIP)
    (bin_ / "corpustok").write_text("#!/usr/bin/env bash\necho \"main job $*\"\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    env = {**os.environ, "FAIL_PIP": "1" if fail else "0"}
    p = subprocess.run(["bash", str(tmp_path / "run_local.sh")], capture_output=True,
                       text=True, env=env, timeout=60)
    if not fail:
        assert p.returncode == 0, p.stderr
        assert "SetuptoolsDeprecationWarning" not in p.stdout + p.stderr
        lines = p.stdout.splitlines()
        assert len(lines) <= 3 and lines[-1] == "main job main", lines
        assert "editable install" in (tmp_path / ".venv" / "setup.log").read_text()
        again = subprocess.run(["bash", str(tmp_path / "run_local.sh")], capture_output=True,
                               text=True, env=env, timeout=60)
        assert again.stdout.splitlines() == ["main job main"]  # set up once
    else:
        assert p.returncode == 1
        assert "editable install" in p.stdout + p.stderr  # the log, shown on failure
        assert "set-up failed" in p.stderr
        assert "main job" not in p.stdout


def test_a_remote_runner_line_counts_the_shards_and_text_written(tmp_path):
    """Workers elsewhere (a Dask cluster) have no channel to the driver: the line is what the
    output folder's entries say (shards, documents, tokens, text bytes), read as they appear."""
    from corpustok.pipeline.output.layout import ENTRIES_DIR, ENTRY_SUFFIX
    out = tmp_path / "o"
    (out / ENTRIES_DIR).mkdir(parents=True)
    log = io.StringIO()
    with progress.Progress(str(out), [], show=True, local=False, stream=log) as p:
        for k, (docs, tokens, nbytes) in enumerate([(10, 400, 2_000_000), (5, 100, 500_000)]):
            (out / ENTRIES_DIR / f"part-{k}{ENTRY_SUFFIX}").write_text(json.dumps(
                {"documents": docs, "tokens": tokens, "bytes": nbytes}))
        p._poll()
        p._draw()  # what the loop prints every 10 s to a log
    assert (p.shards, p.documents, p.tokens, p.text_bytes) == (2, 15, 500, 2_500_000)
    assert "2 shards, 15 docs, 500 tokens, 2.5 MB of text" in log.getvalue()
