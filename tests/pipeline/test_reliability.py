"""Regression tests of issue 12: nothing lost, nothing corrupted, nothing of a user's deleted.

Each test builds the hostile input it needs; CLI behaviour is checked with the command run as a
user runs it (a subprocess), expected ids come from HF ``tokenizers``.
"""
import gzip
import json
import lzma
import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest
import zstandard

from corpustok.pipeline.jobs.tokenize import tokenize
from corpustok.pipeline.output.layout import (ENTRIES_DIR, JOB_FILE, LOCK_FILE, REJECTS_DIR,
                                              RUN_MANIFEST, TMP_DIR, OtherJob, OutputClaim,
                                              OutputInUse)
from tests.conftest import shard_files, TEST_DATA

BERT_VOCAB = str(TEST_DATA / "bert-base-uncased" / "vocab.txt")


def _docs(n, prefix="doc"):
    return [{"id": f"{prefix}{i}", "text": f"document number {i} of {prefix}, some text"}
            for i in range(n)]


def _jsonl(path, records, opener=open):
    with opener(path, "wb") as f:
        f.write(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    return str(path)


def cli(*args, timeout=180, **kw):
    """Run the corpustok command as a user does; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "corpustok.pipeline.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, **kw)


def _ids(out):
    rows = {}
    for f in shard_files(out):
        for r in pq.read_table(os.path.join(out, f)).to_pylist():
            rows[r["id"]] = r["tokens"]
    return rows


# 1. WordPiece: a document longer than --max-doc-mb is streamed; its last word must survive.
def test_streamed_wordpiece_document_keeps_its_last_token(tmp_path):
    from tokenizers import Tokenizer
    hf = Tokenizer.from_file(str(TEST_DATA / "bert-base-uncased" / "tokenizer.json"))
    hf.no_padding()
    hf.no_truncation()
    text = "the night of the living dead " * 200 + "zombies glob"
    src = _jsonl(tmp_path / "long.jsonl", [{"id": "long", "text": text}])
    r = tokenize([src], str(tmp_path / "out"), BERT_VOCAB, max_doc_bytes=1000)
    assert r.ok
    assert _ids(str(tmp_path / "out"))["long"] == hf.encode(text, add_special_tokens=False).ids


# 2 and 8. Truncated or corrupt compressed files are named errors; the other files complete.
def _damaged_inputs(folder):
    records = _docs(3000, "z")
    good = _jsonl(folder / "good.jsonl", _docs(50, "g"))
    raw = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    made = {"good": good}
    zst = zstandard.ZstdCompressor().compress(raw)
    (folder / "cut.jsonl.zst").write_bytes(zst[:int(len(zst) * 0.6)])
    made["cut.zst"] = str(folder / "cut.jsonl.zst")
    for name, data in (("gz", gzip.compress(raw)), ("xz", lzma.compress(raw)), ("zst", zst)):
        flipped = bytearray(data)
        mid = len(flipped) // 2
        flipped[mid:mid + 64] = bytes(b ^ 0xFF for b in flipped[mid:mid + 64])
        path = folder / f"flipped.jsonl.{name}"
        path.write_bytes(bytes(flipped))
        made[f"flipped.{name}"] = str(path)
    deep = folder / "deep.jsonl"
    deep.write_text(json.dumps({"id": "ok", "text": "fine"}) + "\n"
                    + '{"id": "deep", "text": ' + "[" * 10_000 + "]" * 10_000 + "}\n"
                    + json.dumps({"id": "after", "text": "still read"}) + "\n")
    made["deep"] = str(deep)
    return made


def test_damaged_files_are_named_and_the_rest_completes(gpt2_file, tmp_path):
    made = _damaged_inputs(tmp_path)
    out = tmp_path / "out"
    p = cli("tokenize", *made.values(), "--tokenizer", gpt2_file, "--out", out, "--no-progress")
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    manifest = json.loads((out / RUN_MANIFEST).read_text())
    assert manifest["status"] == "COMPLETED_WITH_ERRORS"
    named = {e["source"] for e in manifest["errors"]}
    assert named == {made[k] for k in ("cut.zst", "flipped.gz", "flipped.xz", "flipped.zst")}
    assert any("Truncated" in e["error"] for e in manifest["errors"])
    ids = _ids(str(out))
    assert all(f"g{i}" in ids for i in range(50))  # the good file is whole
    assert {"ok", "after"} <= set(ids) and "deep" not in ids
    assert manifest["totals"]["rejects"].get("bad_json", 0) >= 1  # the deep line, counted
    for k in ("ERROR", made["cut.zst"]):
        assert k in p.stdout


# 3. Concurrent runs: the second refuses while the first holds the folder; a dead holder's
# lock is taken over and its temporaries deleted; shard names carry the configuration.
def test_a_live_run_holds_the_folder(gpt2_file, tmp_path):
    src = _jsonl(tmp_path / "in.jsonl", _docs(20))
    out = str(tmp_path / "out")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from corpustok.pipeline.output.layout import OutputClaim\n"
         f"with OutputClaim({out!r}, {{}}, 'x' * 16, []):\n"
         "    print('held', flush=True); time.sleep(60)\n"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputInUse, match=f"pid {holder.pid}"):
            tokenize([src], out, gpt2_file)
        p = cli("tokenize", src, "--tokenizer", gpt2_file, "--out", out, "--no-progress")
        assert p.returncode == 2 and "in use by another corpustok run" in p.stderr
        assert "Traceback" not in p.stderr
    finally:
        holder.kill()
        holder.wait()
    # The holder was killed: its lock file stays, stale, and the next run takes it over.
    assert os.path.exists(os.path.join(out, LOCK_FILE))
    assert tokenize([src], out, gpt2_file).ok
    assert not os.path.exists(os.path.join(out, LOCK_FILE))


def test_a_killed_runs_temporaries_are_deleted_and_nobody_elses(gpt2_file, tmp_path):
    src = _jsonl(tmp_path / "in.jsonl", _docs(20))
    out = tmp_path / "out"
    (out / REJECTS_DIR).mkdir(parents=True)
    dead = {"pid": 2 ** 22 + 11, "pid_start": 1, "host": os.uname().nodename, "started": 0,
            "run_id": "0123456789ab"}
    (out / LOCK_FILE).write_text(json.dumps(dead))
    (out / TMP_DIR).mkdir(parents=True)
    ours = [out / TMP_DIR / ".tmp-corpustok-0123456789ab-part-x.parquet.1234abcd",
            out / ".tmp-corpustok-0123456789ab-x.parquet.1234abcd",  # the previous layout's
            out / REJECTS_DIR / ".tmp-corpustok-0123456789ab-y.parquet.1234abcd"]
    users = [out / ".tmp-notes", out / REJECTS_DIR / ".tmp-draft",
             out / ".tmp-corpustok-ffffffffffff-z.parquet.1234abcd",  # another run's: kept
             out / TMP_DIR / ".tmp-corpustok-ffffffffffff-z.parquet.1234abcd"]
    for f in ours + users:
        f.write_bytes(b"x")
    r = tokenize([src], str(out), gpt2_file, write_rejects=True)
    assert r.ok
    assert not any(f.exists() for f in ours)
    assert all(f.read_bytes() == b"x" for f in users)
    (out / "README.txt").write_bytes(b"x")  # not hidden: readers of the folder would read it
    with pytest.raises(OtherJob, match="did not write"):
        tokenize([src], str(out), gpt2_file, write_rejects=True)
    assert all(f.read_bytes() == b"x" for f in users + [out / "README.txt"])


def test_other_configuration_other_shard_names(gpt2_file, tmp_path):
    src = _jsonl(tmp_path / "in.jsonl", _docs(20))
    a = tokenize([src], str(tmp_path / "a"), gpt2_file)
    b = tokenize([src], str(tmp_path / "b"), BERT_VOCAB)
    assert {e["shard"] for e in a.manifest["shards"]}.isdisjoint(
        e["shard"] for e in b.manifest["shards"])


# 4. An output folder belongs to one job; nothing is deleted that no manifest lists.
def test_a_second_job_refuses_append_adds_overwrite_lists(gpt2_file, tmp_path):
    one = _jsonl(tmp_path / "one.jsonl", _docs(30, "one"))
    two = _jsonl(tmp_path / "two.jsonl", _docs(30, "two"))
    out = tmp_path / "out"
    assert cli("tokenize", one, "--tokenizer", gpt2_file, "--out", out,
               "--no-progress").returncode == 0
    first = json.loads((out / RUN_MANIFEST).read_text())
    p = cli("tokenize", two, "--tokenizer", gpt2_file, "--out", out, "--no-progress")
    assert p.returncode == 2 and "--append" in p.stderr and "Traceback" not in p.stderr
    p = cli("tokenize", one, "--tokenizer", BERT_VOCAB, "--out", out, "--no-progress")
    assert p.returncode == 2 and "--overwrite" in p.stderr
    assert json.loads((out / RUN_MANIFEST).read_text()) == first  # untouched
    p = cli("tokenize", two, "--tokenizer", gpt2_file, "--out", out, "--append",
            "--no-progress")
    assert p.returncode == 0, p.stderr
    ids = _ids(str(out))
    assert {f"one{i}" for i in range(30)} | {f"two{i}" for i in range(30)} == set(ids)
    p = cli("tokenize", two, "--tokenizer", BERT_VOCAB, "--out", out, "--overwrite",
            "--no-progress")
    assert p.returncode == 0, p.stderr
    removed = [line for line in p.stderr.splitlines() if "removed" in line]
    assert len(removed) == len(first["shards"]) * 2 + 2 + 2  # shards, entries, two more
    assert set(_ids(str(out))) == {f"two{i}" for i in range(30)}


def test_a_failed_run_keeps_the_previous_manifest(gpt2_file, tmp_path, monkeypatch):
    from corpustok.pipeline.runtime import transforms
    src = _jsonl(tmp_path / "in.jsonl", _docs(30))
    out = tmp_path / "out"
    assert tokenize([src], str(out), gpt2_file).ok
    before = (out / RUN_MANIFEST).read_bytes()
    _jsonl(tmp_path / "in.jsonl", _docs(31))  # the input changed: its shard is to be redone

    def broken(*args, **kw):
        raise RuntimeError("tokenizer kernel failed")

    monkeypatch.setattr(transforms, "tokenize_batch", broken)  # the in-process runner
    with pytest.raises(Exception, match="tokenizer kernel failed"):
        tokenize([src], str(out), gpt2_file)
    assert (out / RUN_MANIFEST).read_bytes() == before  # the last completed run's record
    assert not os.path.exists(out / LOCK_FILE)
    monkeypatch.undo()
    r = tokenize([src], str(out), gpt2_file)
    assert r.ok and r.manifest["totals"]["documents"] == 31 and len(r.manifest["superseded"]) == 1


def test_out_inside_an_input_folder_is_refused(gpt2_file, tmp_path):
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    _jsonl(data / "sub" / "a.jsonl", _docs(5))
    for pattern, out in ((f"{data}/**/*.jsonl", data / "out"), (f"{data}/*.json*", data),
                         (f"{data}/sub/*.jsonl", data / "sub")):
        with pytest.raises(ValueError, match="inside"):
            tokenize([pattern], str(out), gpt2_file)
    assert tokenize([f"{data}/sub/*.jsonl"], str(data / "out"), gpt2_file).ok  # * stays put
    _jsonl(data / "out" / "b.jsonl", _docs(5))
    with pytest.raises(ValueError, match="inside --out"):
        tokenize([f"{data}/sub/a.jsonl", f"{data}/out/b.jsonl"], str(data / "out"), gpt2_file)


# 5. A bad id is a counted reject with its line; the rest of the file goes on.
def test_a_lone_surrogate_id_is_a_counted_reject(gpt2_file, tmp_path):
    lines = [json.dumps(r) for r in _docs(3000)]
    lines[999] = '{"id": "x\\udc80", "text": "bad id"}'
    src = tmp_path / "ids.jsonl"
    src.write_text("\n".join(lines) + "\n")
    r = tokenize([str(src)], str(tmp_path / "out"), gpt2_file, write_rejects=True)
    assert r.ok
    assert r.manifest["totals"]["documents"] == 2999
    assert r.manifest["totals"]["rejects"] == {"bad_id": 1}
    [entry] = r.manifest["shards"]
    assert entry["rejected"] == [{"row": 999, "id": None, "reason": "bad_id"}]


# 6. Each file once, however many paths name it.
def test_duplicate_paths_and_symlink_loops_read_each_file_once(gpt2_file, tmp_path,
                                                               monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    src = _jsonl(data / "x.jsonl", _docs(10))
    os.symlink(data, data / "loop")  # two loops: Python's own glob lists 2^40 paths here
    os.symlink(".", data / "loop2")
    os.link(src, data / "hard.jsonl")
    r = tokenize([f"{data}/**/*.jsonl", src, f"{data}/./x.jsonl"], str(tmp_path / "out"),
                 gpt2_file)
    assert r.ok
    assert r.manifest["totals"]["documents"] == 10
    assert len(r.manifest["shards"]) == 1
    assert r.duplicates == 3  # x.jsonl twice more, and its hard link
    monkeypatch.chdir(data)
    p = cli("tokenize", "x.jsonl", "./x.jsonl", "--tokenizer", gpt2_file, "--out",
            tmp_path / "out2", "--no-progress")
    assert p.returncode == 0 and "named a file already read" in p.stdout
    assert json.loads((tmp_path / "out2" / RUN_MANIFEST).read_text())["totals"][
        "documents"] == 10


# 7. All rows rejected is a failure of the job, said so.
def test_mostly_rejected_rows_exit_1(gpt2_file, tmp_path):
    src = tmp_path / "plain.jsonl"
    src.write_text("".join(f"just a line of plain text {i}\n" for i in range(200)))
    p = cli("tokenize", src, "--tokenizer", gpt2_file, "--out", tmp_path / "out",
            "--no-progress")
    assert p.returncode == 1 and "--max-reject-fraction" in p.stderr
    p = cli("tokenize", src, "--tokenizer", gpt2_file, "--out", tmp_path / "out",
            "--no-progress", "--max-reject-fraction", "1")
    assert p.returncode == 0


# 9. A file name that is not UTF-8.
def test_a_file_name_that_is_not_utf8(gpt2_file, tmp_path):
    folder = os.fsencode(tmp_path / "in")
    os.mkdir(folder)
    name = os.path.join(folder, b"caf\xe9.jsonl")
    with open(name, "wb") as f:
        f.write(b"".join(json.dumps(r).encode() + b"\n" for r in _docs(10)))
    out = tmp_path / "out"
    p = cli("tokenize", f"{tmp_path}/in/*.jsonl", "--tokenizer", gpt2_file, "--out", out,
            "--no-progress")
    assert p.returncode == 0, p.stderr
    manifest = json.loads((out / RUN_MANIFEST).read_text())
    assert manifest["totals"]["documents"] == 10
    assert manifest["shards"][0]["source"] == f"{tmp_path}/in/caf\\xe9.jsonl"
    from corpustok import load
    from corpustok.pipeline.output.verify import verify_shards
    v = verify_shards(str(out), load(gpt2_file))
    assert v.ok and v.documents == 10, v.problems


# 11. Signals: one line, 130/143, and the workers end with the driver.
def _workers_of(pid):
    """Pids of live processes started for the driver ``pid`` (they carry its mark)."""
    mark = f"CORPUSTOK_DRIVER_PID={pid}".encode()
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != pid:
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    env = f.read().split(b"\0")
                with open(f"/proc/{d}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            if mark in env and state != b"Z":
                found.append(int(d))
    return found


def _busy_input(tmp_path):
    return _jsonl(tmp_path / "big.jsonl",
                  [{"id": i, "text": "some words to tokenize " * 50} for i in range(20000)])


def _start_and_wait_for_workers(args, sig_group=False, env=None):
    proc = subprocess.Popen([sys.executable, "-m", "corpustok.pipeline.cli", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=sig_group, env=env)
    deadline = time.time() + 60
    while time.time() < deadline and len(_workers_of(proc.pid)) < 2 and proc.poll() is None:
        time.sleep(0.1)
    assert len(_workers_of(proc.pid)) >= 2, "the workers did not start"
    return proc


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
@pytest.mark.parametrize("sig,code,local_mode", [(signal.SIGINT, 130, "processes"),
                                                 (signal.SIGTERM, 143, "processes"),
                                                 (signal.SIGINT, 130, "threads")])
def test_interrupt_says_one_line_and_stops_the_workers(gpt2_file, tmp_path, sig, code,
                                                       local_mode):
    src = _busy_input(tmp_path)
    out = tmp_path / "out"
    tmp = tmp_path / "tmp"  # the run's own temporaries: progress channel, worker log
    tmp.mkdir()
    args = ["tokenize", src, "--tokenizer", gpt2_file, "--out", out, "--workers", "2",
            "--local-mode", local_mode, "--shard-mb", "0.2", "--no-progress"]
    env = {**os.environ, "TMPDIR": str(tmp)}
    if local_mode == "processes":
        proc = _start_and_wait_for_workers(args, sig_group=True, env=env)
    else:
        proc = subprocess.Popen([sys.executable, "-m", "corpustok.pipeline.cli",
                                 *map(str, args)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True,
                                env=env)
    deadline = time.time() + 60  # signal once the workers write shards
    while time.time() < deadline and not (os.path.isdir(out / ENTRIES_DIR) and
                                          os.listdir(out / ENTRIES_DIR)):
        time.sleep(0.05)
    assert proc.poll() is None, "the job ended before it could be interrupted"
    os.killpg(proc.pid, sig)  # as a terminal's Ctrl-C reaches the whole group
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert "rerun the same command to resume" in err
    time.sleep(0.5)
    assert _workers_of(proc.pid) == []
    assert [f for f in os.listdir(tmp) if f.startswith("corpustok-")] == []
    p = cli("tokenize", src, "--tokenizer", gpt2_file, "--out", out, "--workers", "2",
            "--shard-mb", "0.2", "--no-progress")
    assert p.returncode == 0, p.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_workers_die_with_a_killed_driver(gpt2_file, tmp_path):
    src = _busy_input(tmp_path)
    out = tmp_path / "out"
    proc = _start_and_wait_for_workers(["tokenize", src, "--tokenizer", gpt2_file, "--out", out,
                                        "--workers", "2", "--local-mode", "processes",
                                        "--shard-mb", "0.2", "--no-progress"])
    workers = _workers_of(proc.pid)
    proc.kill()
    proc.wait()
    deadline = time.time() + 5
    while time.time() < deadline and _workers_of(proc.pid):
        time.sleep(0.05)
    assert _workers_of(proc.pid) == [], workers
    snapshot = sorted(os.listdir(out))
    time.sleep(0.5)
    assert sorted(os.listdir(out)) == snapshot  # nobody writes any more


# 12. An output that cannot be written: one line, exit 4, found before reading anything.
def test_unwritable_output_is_one_line_exit_4(gpt2_file, tmp_path):
    src = _jsonl(tmp_path / "in.jsonl", _docs(5))
    from corpustok.pipeline.output.layout import NOT_WRITABLE
    probe = "/sys/corpustok-probe"  # a mount nobody may write to, root included
    try:
        os.mkdir(probe)
        os.rmdir(probe)
        pytest.skip("/sys is writable here")
    except OSError as e:
        if e.errno not in NOT_WRITABLE:
            pytest.skip(f"/sys is not a read-only mount here ({e})")
        reason = e.strerror
    p = cli("tokenize", src, "--tokenizer", gpt2_file, "--out", "/sys/corpustok-out",
            "--no-progress")
    assert p.returncode == 4, p.stderr
    lines = [line for line in p.stderr.splitlines() if "apitools" not in line]
    assert "Traceback" not in p.stderr and len(lines) == 1, p.stderr
    assert reason in lines[0] and "/sys/corpustok-out" in lines[0]


def test_disk_full_during_the_run_is_one_line_exit_4(gpt2_file, tmp_path, monkeypatch, capsys):
    import errno

    from corpustok.pipeline import files
    from corpustok.pipeline.output import shards
    from corpustok.pipeline.cli import main
    src = _jsonl(tmp_path / "in.jsonl", _docs(40))
    real = files.stage

    def full(path, write, run_id=None, tmp_dir=None):
        if path.endswith(".parquet"):
            raise OSError(errno.ENOSPC, "No space left on device", path)
        return real(path, write, run_id, tmp_dir)

    monkeypatch.setattr(shards.files, "stage", full)
    code = main(["tokenize", src, "--tokenizer", gpt2_file, "--out", str(tmp_path / "out"),
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 4, err
    assert "No space left on device" in err and "Traceback" not in err
    assert not os.path.exists(tmp_path / "out" / LOCK_FILE)


FULL_DISK = r"""
import errno, sys
from corpustok.pipeline import files
from corpustok.pipeline.output import shards
real = files.stage
def full(path, write, run_id=None, tmp_dir=None):
    if path.endswith(".parquet"):
        raise OSError(errno.ENOSPC, "No space left on device", path)
    return real(path, write, run_id, tmp_dir)
shards.files.stage = full
from corpustok.pipeline.cli import run
sys.exit(run())
"""


@pytest.mark.parametrize("workers", ["1", "2"])
def test_disk_full_is_one_line_in_a_real_terminal_process(gpt2_file, tmp_path, workers):
    """The command as a user runs it (its own stderr, Beam's worker threads printing their
    tracebacks there): one line, exit 4."""
    src = _jsonl(tmp_path / "in.jsonl", _docs(400))
    p = subprocess.run([sys.executable, "-c", FULL_DISK, "tokenize", src, "--tokenizer",
                        gpt2_file, "--out", str(tmp_path / "out"), "--shard-mb", "0.005",
                        "--workers", workers, "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 4, p.stderr
    [line] = p.stderr.strip().splitlines()
    assert line.startswith("corpustok tokenize: error: cannot write the output (") and \
        "No space left on device; free space or choose a writable --out" in line, p.stderr


def test_claim_modes_are_checked(tmp_path):
    with pytest.raises(ValueError, match="mode"):
        OutputClaim(str(tmp_path), {}, "x" * 16, [], mode="merge")
    assert issubclass(OtherJob, ValueError)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="tmpfs")
def test_disk_full_with_two_workers_is_one_line(gpt2_file, tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(small)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        src = _busy_input(tmp_path)
        p = cli("tokenize", src, "--tokenizer", gpt2_file, "--out", small / "out", "--workers",
                "2", "--local-mode", "processes", "--shard-mb", "0.2", "--no-progress")
        lines = [line for line in p.stderr.splitlines() if "apitools" not in line]
        assert p.returncode == 4, p.stderr
        assert "Traceback" not in p.stderr and len(lines) <= 2, p.stderr
        assert "No space left on device" in lines[-1]
    finally:
        subprocess.run(["umount", str(small)])


# Review findings: what a rerun must keep, and names the job must treat as one file.
def test_an_input_unreadable_on_a_rerun_keeps_its_shards(gpt2_file, tmp_path, monkeypatch):
    from corpustok.pipeline import files
    a = _jsonl(tmp_path / "a.jsonl", _docs(5, "a"))
    b = _jsonl(tmp_path / "b.jsonl", _docs(5, "b"))
    out = tmp_path / "out"
    first = tokenize([a, b], str(out), gpt2_file)
    real = files.open_lines

    def flaky(path, on_bytes=None):
        if path.endswith("b.jsonl"):
            raise OSError(5, "Input/output error", path)
        return real(path, on_bytes)

    monkeypatch.setattr(files, "open_lines", flaky)
    second = tokenize([a, b], str(out), gpt2_file)
    assert second.manifest["status"] == "COMPLETED_WITH_ERRORS"
    assert second.manifest["superseded"] == []
    assert {e["file"] for e in first.manifest["shards"]} <= set(shard_files(out))
    monkeypatch.undo()
    assert tokenize([a, b], str(out), gpt2_file).manifest["totals"]["documents"] == 10


def test_append_and_reruns_know_a_file_by_identity(gpt2_file, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _jsonl(tmp_path / "a.jsonl", _docs(5, "a"))
    _jsonl(tmp_path / "b.jsonl", _docs(5, "b"))
    out = str(tmp_path / "out")
    assert tokenize(["a.jsonl"], out, gpt2_file).ok
    assert tokenize([str(tmp_path / "a.jsonl")], out, gpt2_file).ok  # the same job
    r = tokenize(["./a.jsonl", "b.jsonl"], out, gpt2_file, mode="append")
    assert r.manifest["totals"]["documents"] == 10 and len(r.manifest["shards"]) == 2
    job = json.loads((tmp_path / "out" / JOB_FILE).read_text())
    assert job["inputs"] == [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]
    replaced = tmp_path / "a.new"  # rewritten as editors do: a new file renamed over it
    _jsonl(replaced, _docs(6, "a"))
    os.replace(replaced, tmp_path / "a.jsonl")
    r = tokenize(["a.jsonl", "b.jsonl"], out, gpt2_file)
    assert r.manifest["totals"]["documents"] == 11 and len(r.manifest["superseded"]) == 1
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)  # relative names of another folder are other files
    _jsonl(other / "a.jsonl", _docs(3, "x"))
    with pytest.raises(OtherJob, match="other inputs"):
        tokenize(["a.jsonl"], out, gpt2_file)


def test_a_folder_with_someone_elses_manifest_is_refused(gpt2_file, tmp_path):
    src = _jsonl(tmp_path / "in.jsonl", _docs(5))
    for name in (RUN_MANIFEST, JOB_FILE):
        out = tmp_path / f"out-{os.path.basename(name)}"
        (out / name).parent.mkdir(parents=True)
        (out / name).write_text('{"mine": true}')
        with pytest.raises(OtherJob, match="not a corpustok file"):
            tokenize([src], str(out), gpt2_file)
        assert (out / name).read_text() == '{"mine": true}'


def test_overwrite_of_the_same_job_keeps_its_shards(gpt2_file, tmp_path):
    src = _jsonl(tmp_path / "in.jsonl", _docs(5))
    out = str(tmp_path / "out")
    first = tokenize([src], out, gpt2_file)
    again = tokenize([src], out, gpt2_file, mode="overwrite")
    assert again.removed == [] and again.counters.get("shards_skipped") == 1
    assert again.manifest["shards"] == first.manifest["shards"]


@pytest.mark.parametrize("suffix", [".jsonl.zst", ".parquet"])
def test_other_formats_with_names_that_are_not_utf8(gpt2_file, tmp_path, suffix):
    import pyarrow as pa
    folder = os.fsencode(tmp_path / "in")
    os.mkdir(folder)
    name = os.path.join(folder, b"caf\xe9" + suffix.encode())
    if suffix == ".parquet":
        with open(name, "wb") as f:  # pyarrow opens only UTF-8 names itself
            pq.write_table(pa.Table.from_pylist(_docs(7)), f)
    else:
        with open(name, "wb") as f:
            f.write(zstandard.ZstdCompressor().compress(
                b"".join(json.dumps(r).encode() + b"\n" for r in _docs(7))))
    r = tokenize([f"{tmp_path}/in/*{suffix}"], str(tmp_path / "out"), gpt2_file)
    assert r.ok, r.manifest["errors"]
    assert r.manifest["totals"]["documents"] == 7


def test_only_the_output_makes_exit_4(tmp_path):
    import errno
    from corpustok.pipeline.output.layout import not_writable
    out = str(tmp_path / "out")
    elsewhere = PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "tok.json"))
    inside = PermissionError(errno.EACCES, "Permission denied", f"{out}/x.parquet")
    full = OSError(errno.ENOSPC, "No space left on device")
    assert not_writable(elsewhere, out) is None
    assert not_writable(inside, out).errno == errno.EACCES
    assert not_writable(full).errno == errno.ENOSPC


def test_a_bug_while_reading_fails_the_job_not_the_file(gpt2_file, tmp_path, monkeypatch,
                                                        capsys):
    from corpustok.pipeline.read import jsonl
    from corpustok.pipeline.cli import main
    from corpustok.pipeline.jobs.tokenize import JobFailed
    src = _jsonl(tmp_path / "in.jsonl", _docs(5))

    def buggy(*args, **kw):
        raise TypeError("a bug of ours")

    monkeypatch.setattr(jsonl, "_parse_lines", buggy)
    with pytest.raises(JobFailed, match="a bug of ours"):
        tokenize([src], str(tmp_path / "out"), gpt2_file)
    assert main(["tokenize", src, "--tokenizer", gpt2_file, "--out", str(tmp_path / "out"),
                 "--no-progress"]) == 3
    assert "Traceback" in capsys.readouterr().err
