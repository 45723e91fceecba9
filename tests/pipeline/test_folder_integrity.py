"""What a folder holds after anything: a run killed at every step of writing a shard, then
rerun after its input changed, or replaced with ``--overwrite`` by another tokenizer's job,
leaves exactly the shards its run manifest lists (no orphan, no duplicate row); a damaged
or swapped shard is found (``corpustok verify``) and redone by the rerun, byte-identical to a
clean run; a folder holding files corpustok did not write is refused and left as it was; the
job's record names the tokenizer and its vocabulary size; ``source`` keeps the name the
input was first given."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from corpustok.pipeline.cli import main
from corpustok.pipeline.output.layout import DATA_DIR, ENTRIES_DIR, JOB_FILE, RUN_MANIFEST, TMP_DIR

# Runs the command line with a hook that SIGKILLs the process when write_shard ends step
# argv[1] for the argv[2]-th time (1-based); the rest of argv is the command.
KILLER = """
import os, signal, sys
import corpustok.pipeline.output.shards as shards
seen = [0]
def hook(step):
    if step == sys.argv[1]:
        seen[0] += 1
        if seen[0] == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
shards._STEP_HOOK = hook
from corpustok.pipeline.cli import main
sys.exit(main(sys.argv[3:]))
"""


def _inputs(folder, n=60):
    os.makedirs(folder, exist_ok=True)
    paths = []
    for name, first in (("a.jsonl", 0), ("b.jsonl", 1000)):
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            for i in range(n):
                text = None if i % 5 == 2 else f"document {first + i}: words, {i * i}"
                f.write(json.dumps({"id": first + i, "text": text}) + "\n")
        paths.append(path)
    return paths


def _command(paths, out, tokenizer, *extra):
    return ["tokenize", *paths, "--tokenizer", tokenizer, "--out", str(out), "--shard-mb",
            "0.0004", "--workers", "1", "--rejects", "--no-progress", *extra]


def _manifest(out):
    with open(os.path.join(out, RUN_MANIFEST)) as f:
        return json.load(f)


def assert_folder_is_its_manifest(out):
    """data/ holds exactly the listed shards, .corpustok/entries exactly their entries, no
    temporary is left, and every kept row is in one shard only."""
    m = _manifest(out)
    assert m["status"] == "COMPLETED"
    listed = {e["file"] for e in m["shards"]}
    assert {f"{DATA_DIR}/{n}" for n in os.listdir(os.path.join(out, DATA_DIR))} == listed
    assert {n[:-5] for n in os.listdir(os.path.join(out, ENTRIES_DIR))} == \
        {e["shard"] for e in m["shards"]}
    assert not os.listdir(os.path.join(out, TMP_DIR))
    rows = pq.read_table(os.path.join(out, DATA_DIR), columns=["source", "row"]).to_pylist()
    assert len(rows) == len({(r["source"], r["row"]) for r in rows}) == \
        m["totals"]["documents"]
    assert main(["verify", str(out)]) == 0
    return m


def _killed(command, step, nth):
    p = subprocess.run([sys.executable, "-c", KILLER, step, str(nth), *command],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == -signal.SIGKILL, p.stderr[-2000:]


@pytest.mark.parametrize("step", ["staged", "rejects", "entry", "published"])
def test_a_kill_at_every_step_then_a_changed_input_leaves_no_orphan(gpt2_file, tmp_path, step):
    paths = _inputs(str(tmp_path / "in"))
    out = tmp_path / "out"
    command = _command(paths, out, gpt2_file)
    _killed(command, step, 3)
    time.sleep(0.01)
    os.utime(paths[0])  # the input changes: its shards get new names
    assert main(command) == 0
    m = assert_folder_is_its_manifest(out)
    clean = tmp_path / "clean"
    assert main(_command(paths, clean, gpt2_file)) == 0
    assert [e["sha256"] for e in _manifest(clean)["shards"]] == \
        [e["sha256"] for e in m["shards"]]  # byte-identical to an uninterrupted run


def test_overwrite_after_a_kill_leaves_no_row_of_the_old_job(gpt2_file, tmp_path):
    paths = _inputs(str(tmp_path / "in"))
    out = tmp_path / "out"
    _killed(_command(paths, out, gpt2_file), "entry", 4)
    other = _command(paths, out, gpt2_file, "--eos", "<|endoftext|>")  # another job
    assert main(other) == 2  # refused without --overwrite
    assert main(other + ["--overwrite"]) == 0
    m = assert_folder_is_its_manifest(out)
    eos = m["config"]["eos"]
    tokens = pq.read_table(os.path.join(out, DATA_DIR), columns=["tokens"]).column("tokens")
    assert all(t[-1] == eos for t in tokens.to_pylist())


def _clean_run(gpt2_file, tmp_path):
    paths = _inputs(str(tmp_path / "in"))
    out = tmp_path / "out"
    command = _command(paths, out, gpt2_file)
    assert main(command) == 0
    m = _manifest(out)
    assert len(m["shards"]) > 4
    data = {e["file"]: (out / e["file"]).read_bytes() for e in m["shards"]}
    return out, command, m, data


def test_a_flipped_byte_is_named_and_redone(gpt2_file, tmp_path, capsys):
    out, command, m, data = _clean_run(gpt2_file, tmp_path)
    victim = m["shards"][2]["file"]
    damaged = bytearray(data[victim])
    damaged[len(damaged) // 2] ^= 0x10  # same size: only the hash tells
    (out / victim).write_bytes(bytes(damaged))
    capsys.readouterr()
    assert main(["verify", str(out)]) == 1
    assert victim in capsys.readouterr().out
    assert main(command) == 0
    assert "1 written" in capsys.readouterr().out
    assert {f: (out / f).read_bytes() for f in data} == data
    assert_folder_is_its_manifest(out)


def test_a_swapped_shard_is_named_and_redone(gpt2_file, tmp_path, capsys):
    out, command, m, data = _clean_run(gpt2_file, tmp_path)
    a, b = m["shards"][0]["file"], m["shards"][3]["file"]
    shutil.copyfile(out / a, out / b)
    capsys.readouterr()
    assert main(["verify", str(out)]) == 1
    assert b in capsys.readouterr().out
    assert main(command) == 0
    assert {f: (out / f).read_bytes() for f in data} == data


@pytest.mark.parametrize("where", ["notes.txt", "corpus.idx", "data/mine.parquet", "data/SHARD"])
def test_a_folder_holding_files_we_did_not_write_is_refused(gpt2_file, tmp_path, capsys, where):
    paths = _inputs(str(tmp_path / "in"))
    probe = tmp_path / "probe"
    assert main(_command(paths, probe, gpt2_file)) == 0
    shard = os.path.basename(_manifest(probe)["shards"][0]["file"])
    out = tmp_path / "out"
    user = out / where.replace("SHARD", shard)  # also a file named as a shard of the job
    user.parent.mkdir(parents=True)
    user.write_bytes(b"the user's own bytes")
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    capsys.readouterr()
    assert main(_command(paths, out, gpt2_file)) == 2
    assert "did not write" in capsys.readouterr().err
    assert user.read_bytes() == b"the user's own bytes"
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_the_job_names_its_tokenizer_and_vocabulary(gpt2_file, tmp_path):
    paths = _inputs(str(tmp_path / "in"))
    out = tmp_path / "out"
    assert main(_command(paths, out, gpt2_file)) == 0
    m = _manifest(out)
    from corpustok.pipeline.files import sha256_of
    assert m["tokenizer"] == {"sha256": sha256_of(gpt2_file), "name": "gpt2.json",
                              "vocab_size": 50257}
    with open(out / JOB_FILE) as f:
        config = json.load(f)["config"]
    assert (config["vocab_size"], config["tokenizer_name"]) == (50257, "gpt2.json")


def test_source_keeps_the_name_first_given(gpt2_file, tmp_path, monkeypatch, capsys):
    _inputs(str(tmp_path / "in"))
    monkeypatch.chdir(tmp_path)
    command = _command([os.path.join("in", "a.jsonl")], "out", gpt2_file)
    assert main(command) == 0
    m = _manifest(tmp_path / "out")
    names = set(pq.read_table(tmp_path / "out", columns=["source"]).column("source").to_pylist())
    assert names == {"in/a.jsonl"}
    monkeypatch.chdir(tmp_path / "in")  # the same file by another spelling, from elsewhere
    capsys.readouterr()
    assert main(_command(["./a.jsonl"], tmp_path / "out", gpt2_file)) == 0
    assert "0 written" in capsys.readouterr().out
    assert _manifest(tmp_path / "out")["shards"] == m["shards"]
