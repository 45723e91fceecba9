"""The tokenize job against a real S3-compatible store (SeaweedFS on 127.0.0.1, tests/store.py)
through Beam's S3 filesystem: inputs of every kind and a ``**`` glob, the tokenizer file and the
output folder all ``s3://``; the output equals a local run's; a run killed at a seeded moment
and resumed is byte-identical to an uninterrupted one; ``--append``/``--overwrite``; the folder
lock as a conditional create; exports and ``PackedSequences`` (through pyarrow's S3
filesystem) read the bucket.

Marked ``store`` (``.ci/run`` runs them after the readers): the server takes ~3 s to start.
"""
import gzip
import hashlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import TEST_DATA
from tests.store import start_store, stop_store

pytestmark = pytest.mark.store
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = start_store(tmp_path_factory.mktemp("seaweedfs"))
    yield s
    stop_store(s)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A local folder of inputs of every kind, nested (``**``): Parquet (4 row groups),
    JSONL.gz with one malformed line, JSONL.zst, text; and the GPT-2 tokenizer file."""
    import zstandard
    from corpustok import BytePairTokenizer
    root = tmp_path_factory.mktemp("corpus")
    lines = (TEST_DATA / "bpe_sample.txt").read_text().splitlines()
    rng = random.Random(47)
    texts = [" ".join(rng.choices(lines, k=6)) for _ in range(2400)]
    (root / "in" / "sub" / "deep").mkdir(parents=True)
    pq.write_table(pa.table({"id": [f"p{i}" for i in range(1200)], "text": texts[:1200]}),
                   str(root / "in" / "a.parquet"), row_group_size=300)
    jsonl = [json.dumps({"id": f"j{i}", "text": t}) for i, t in enumerate(texts[1200:1700])]
    (root / "in" / "sub" / "b.jsonl.gz").write_bytes(
        gzip.compress(("\n".join(jsonl[:250] + ["{not json"] + jsonl[250:]) + "\n").encode()))
    (root / "in" / "sub" / "c.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(
        ("\n".join(json.dumps({"id": f"z{i}", "text": t})
                   for i, t in enumerate(texts[1700:2100])) + "\n").encode()))
    (root / "in" / "sub" / "deep" / "d.txt").write_text("\n".join(texts[2100:]) + "\n")
    (root / "in" / ".hidden.txt").write_text("never read\n")  # ** skips hidden names
    BytePairTokenizer.from_hf(TEST_DATA / "gpt2" / "vocab.json",
                              TEST_DATA / "gpt2" / "merges.txt").save(str(root / "gpt2.json"))
    return root


@pytest.fixture(scope="module")
def uploaded(store, corpus):
    """The corpus in the bucket: ``s3://corpus/job/in/...`` and ``.../tok/gpt2.json``."""
    store.upload(corpus / "in", "job/in")
    store.put("job/tok/gpt2.json", (corpus / "gpt2.json").read_bytes())
    return f"{store.root}/job"


KW = dict(shard_bytes=60_000, eos="<|endoftext|>", write_rejects=True)


def _tokenize(inputs, out, tok, store=None, **kw):
    from corpustok.pipeline.jobs.tokenize import tokenize
    args = list(kw.pop("beam_args", ())) + (store.beam_args if store else [])
    return tokenize(inputs, out, tok, beam_args=args, **{**KW, **kw})


def _tables(out):
    """Token tables of a folder by (input file name, rows), ``source`` left out (the path as
    given differs between a local and a bucket run; every other column must be equal)."""
    from corpustok.pipeline import files
    from corpustok.pipeline.output.layout import RUN_MANIFEST
    m = json.loads(files.read_bytes(files.join(out, RUN_MANIFEST)))
    found = {}
    for e in m["shards"]:
        with files.parquet_file(files.join(out, e["file"])) as pf:
            found[(e["source"].rsplit("/", 1)[-1], tuple(e["rows"]))] = \
                pf.read().drop_columns(["source"])
    return m, found


def _written(store, prefix):
    """The objects a run writes under ``prefix`` (shards, entries, rejects, the run manifest)
    but the job record and lock, which carry the run's id and time."""
    return {k[len(prefix) + 1:]: v for k, v in store.keys(prefix + "/").items()
            if not k.endswith(("/job.json", "/lock"))}


def test_a_bucket_job_equals_the_local_one_and_reads_back(store, corpus, uploaded, tmp_path):
    from corpustok.pipeline.encode import load_tokenizer
    from corpustok.pipeline.output.export import export
    from corpustok.pipeline.output.verify import verify_shards
    local_out = str(tmp_path / "local")
    local = _tokenize([str(corpus / "in")], local_out, str(corpus / "gpt2.json"))
    out = f"{uploaded}/out-equal"
    remote = _tokenize([f"{uploaded}/in/**"], out, f"{uploaded}/tok/gpt2.json", store)
    assert local.manifest["status"] == remote.manifest["status"] == "COMPLETED"
    lm, lt = _tables(local_out)
    rm, rt = _tables(out)
    assert rm["totals"] == lm["totals"] and rm["totals"]["shards"] >= 8
    assert rm["totals"]["rejects"] == {"bad_json": 1}
    assert rt.keys() == lt.keys() and len({k[0] for k in rt}) == 4  # .hidden.txt not read
    for key in lt:
        assert rt[key].equals(lt[key]), key
    keys = store.keys("job/out-equal/")
    assert any("/.corpustok/rejects/" in k for k in keys)
    assert sum(k.startswith("job/out-equal/data/") for k in keys) == rm["totals"]["shards"]
    assert not any("lock" in k or "tmp" in k for k in keys)  # released, nothing left over
    # The entry of each shard records the object's size and sha256.
    for e in rm["shards"]:
        blob = keys[f"job/out-equal/{e['file']}"]
        assert (len(blob), hashlib.sha256(blob).hexdigest()) == (e["parquet_bytes"], e["sha256"])

    v = verify_shards(out, load_tokenizer(f"{uploaded}/tok/gpt2.json"))
    assert v.ok, v.problems
    # Exports read the bucket (and write local files): the same token stream as locally.
    (tmp_path / "exp-remote").mkdir()
    (tmp_path / "exp-local").mkdir()
    a = export(out, "numpy", str(tmp_path / "exp-remote" / "part"))
    b = export(local_out, "numpy", str(tmp_path / "exp-local" / "part"))
    assert a["files"] == b["files"] and a["tokens"] == b["tokens"] and a["dtype"] == b["dtype"]
    # Shards go in name order, and a name hashes the input's path: documents by id.
    assert _exported(tmp_path / "exp-remote" / "part", a["dtype"]) == \
        _exported(tmp_path / "exp-local" / "part", b["dtype"])


def _exported(prefix, dtype):
    """A numpy-layout export's documents: (id, source file name, row) -> token bytes."""
    import csv
    ids = np.fromfile(f"{prefix}.npy", dtype=dtype)
    with gzip.open(f"{prefix}.csv.gz", "rt", newline="") as f:
        return {(doc, src.rsplit("/", 1)[-1], row): ids[int(a):int(b)].tobytes()
                for a, b, doc, src, row in csv.reader(f)}


def _cli(args, store, env=None, **kw):
    return subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "tokenize", *args, "--no-progress",
         *store.beam_args], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **kw)


def _entries(store, prefix):
    return [k for k in store.keys(prefix + "/.corpustok/entries/")]


@pytest.mark.parametrize("seed", [1])
def test_a_run_killed_at_a_seeded_moment_resumes_byte_identical(store, uploaded, seed):
    args = [f"{uploaded}/in/**", "--tokenizer", f"{uploaded}/tok/gpt2.json", "--shard-mb",
            "0.06", "--rejects", "--eos", "<|endoftext|>", "--workers", "1"]
    ref = _cli([*args, "--out", f"{uploaded}/out-ref"], store)
    assert ref.wait(300) == 0, ref.stderr.read().decode()
    reference = _written(store, "job/out-ref")
    shards = sum(k.startswith("data/") for k in reference)
    kill_after = random.Random(seed).randrange(1, shards - 1)  # entries written before the kill
    out = f"{uploaded}/out-killed"
    run = _cli([*args, "--out", out], store)
    deadline = time.monotonic() + 300
    while len(store.keys("job/out-killed/.corpustok/entries/")) < kill_after:
        assert run.poll() is None and time.monotonic() < deadline, run.stderr.read().decode()
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    at_kill = store.keys("job/out-killed/")
    assert "job/out-killed/.corpustok/lock" in at_kill  # the dead run's
    assert "job/out-killed/.corpustok/manifest.json" not in at_kill
    assert 0 < sum("/data/" in k for k in at_kill) < shards
    for k, blob in at_kill.items():  # every shard object is whole and entered before it
        if "/data/" in k:
            name = k.rsplit("/", 1)[1][:-len(".parquet")]
            e = json.loads(at_kill[f"job/out-killed/.corpustok/entries/{name}.json"])
            assert hashlib.sha256(blob).hexdigest() == e["sha256"]
    again = _cli([*args, "--out", out], store)
    err = again.communicate(timeout=300)[1].decode()
    assert again.returncode == 0, err
    assert _written(store, "job/out-killed") == reference
    assert "job/out-killed/.corpustok/lock" not in store.keys("job/out-killed/")


def test_append_overwrite_and_the_lock(store, uploaded):
    from corpustok.pipeline import files
    from corpustok.pipeline.output.layout import (LOCK_FILE, OtherJob, OutputClaim,
                                                  OutputInUse)
    out = f"{uploaded}/out-modes"
    tok = f"{uploaded}/tok/gpt2.json"
    first = _tokenize([f"{uploaded}/in/a.parquet"], out, tok, store)
    assert first.ok
    with pytest.raises(OtherJob, match="--append adds inputs"):
        _tokenize([f"{uploaded}/in/sub/c.jsonl.zst"], out, tok, store)
    more = _tokenize([f"{uploaded}/in/sub/c.jsonl.zst"], out, tok, store, mode="append")
    assert more.ok and len(more.kept) == first.manifest["totals"]["shards"]
    assert {e["source"].rsplit("/", 1)[1] for e in more.manifest["shards"]} == \
        {"a.parquet", "c.jsonl.zst"}
    store.put("job/out-modes/data/notes.txt", b"the user's")  # never ours: refused, kept
    with pytest.raises(OtherJob, match="did not write"):
        _tokenize([f"{uploaded}/in/a.parquet"], out, tok, store, mode="overwrite")
    store.client().delete_object(Bucket=store.bucket, Key="job/out-modes/data/notes.txt")
    removed = []
    over = _tokenize([f"{uploaded}/in/a.parquet"], out, tok, store, mode="overwrite",
                     shard_bytes=200_000, on_remove=removed.append)
    assert over.ok and removed
    left = {k for k in store.keys("job/out-modes/data/")}
    assert left == {f"job/out-modes/{e['file']}" for e in over.manifest["shards"]}

    # The lock: a live run's refuses a second; a dead run of this host is taken over; one of
    # another host refuses, naming the object to delete.
    config = {"x": 1}
    with OutputClaim(out, config, "c", [], mode="overwrite"):
        with pytest.raises(OutputInUse, match="in use by another corpustok run"):
            with OutputClaim(out, config, "c", [], mode="overwrite"):
                pass
    lock = files.join(out, LOCK_FILE)
    assert not files.exists(lock)
    dead = {"pid": 2 ** 22 + 11, "pid_start": 1, "host": socket.gethostname(), "started": 0,
            "run_id": "deadbeef0001"}
    store.put("job/out-modes/.corpustok/lock", json.dumps(dead).encode())
    with OutputClaim(out, config, "c", [], mode="overwrite"):
        assert json.loads(files.read_bytes(lock))["pid"] == os.getpid()
    other = dict(dead, host="elsewhere")
    store.put("job/out-modes/.corpustok/lock", json.dumps(other).encode())
    with pytest.raises(OutputInUse, match="delete s3://corpus/job/out-modes/.corpustok/lock"):
        _tokenize([f"{uploaded}/in/a.parquet"], out, tok, store, mode="overwrite")
    assert json.loads(files.read_bytes(lock)) == other  # left as it was


def test_the_conditional_create_has_one_winner(store):
    from corpustok.pipeline import files
    files.use_options(store.beam_args)
    path = f"{store.root}/race/lock"
    wins = []
    barrier = threading.Barrier(8)

    def take(i):
        barrier.wait()
        wins.append(files.create_new(path, f"{i}".encode()))

    threads = [threading.Thread(target=take, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(w is not None for w in wins) == 1
    data, version = files.read_versioned(path)
    assert files.replace_if(path, b"x", '"not-the-version"') is None
    assert not files.remove_if(path, '"not-the-version"')
    assert files.remove_if(path, version) and files.read_versioned(path) is None


def test_packed_sequences_read_a_folder_in_the_bucket(store, corpus, tmp_path):
    """The same folder, uploaded byte for byte, read through pyarrow's S3 filesystem: the same
    fingerprint and windows as on the local disk, in a copy made for a DataLoader worker too;
    a shard replaced in the bucket is refused by its sha256 when the stream reaches it."""
    import pickle

    import pyarrow.fs as pafs

    from corpustok.packed import PackedSequences
    from tests.store import ACCESS_KEY, REGION, SECRET_KEY
    local_out = str(tmp_path / "local")
    assert _tokenize([str(corpus / "in")], local_out, str(corpus / "gpt2.json")).ok
    store.upload(Path(local_out), "job/packed")
    fs = pafs.S3FileSystem(endpoint_override=store.endpoint, access_key=ACCESS_KEY,
                           secret_key=SECRET_KEY, scheme="http", region=REGION)
    local = PackedSequences(local_out, seq_len=64, seed=3, batch_size=4)
    remote = PackedSequences(f"{store.root}/job/packed", seq_len=64, seed=3, batch_size=4,
                             filesystem=fs)
    assert remote.fingerprint == local.fingerprint and len(remote) == len(local) > 10
    want = [(t.tobytes(), [s.tobytes() for s in st]) for t, st in local]
    assert [(t.tobytes(), [s.tobytes() for s in st]) for t, st in remote] == want
    copy = pickle.loads(pickle.dumps(remote))  # what a spawned DataLoader worker gets
    assert [t.tobytes() for t, _ in copy] == [t for t, _ in want]

    manifest = json.loads((Path(local_out) / ".corpustok" / "manifest.json").read_text())
    first = manifest["shards"][0]["file"]
    blob = bytearray((Path(local_out) / first).read_bytes())
    blob[len(blob) // 2] ^= 1  # same size, other bytes
    store.put(f"job/packed/{first}", bytes(blob))
    damaged = PackedSequences(f"{store.root}/job/packed", seq_len=64, filesystem=fs)
    with pytest.raises(ValueError, match="damaged or replaced"):
        list(damaged)
