"""Remote paths: the tokenize and train jobs read inputs, the tokenizer and resumable output
through Beam's FileSystems, shown with an in-memory ``memfs://`` filesystem that behaves like
an object store (see tests/memfs.py). Results must equal a local run's; every remote handle
opened is closed; client errors surface as OSErrors; stale and temporary objects are cleaned."""
import gzip
import io
import json
import os
import socket

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpustok.pipeline import files
from corpustok.pipeline.encode import load_tokenizer
from corpustok.pipeline.files import beam as beam_files
from corpustok.pipeline.jobs.demo import sample_path
from corpustok.pipeline.jobs.tokenize import tokenize
from corpustok.pipeline.jobs.train import train
from corpustok.pipeline.output.layout import ENTRIES_DIR, LOCK_FILE, REJECTS_DIR, RUN_MANIFEST, OtherJob
from corpustok.pipeline.output.verify import verify_shards
from tests.conftest import TEST_DATA
from tests.memfs import MemFileSystem

ROOT = "memfs://bucket"


def _forget_options():
    """Beam keeps the options of the last pipeline built or run in this process; the jobs must
    hand their own to the filesystems, before any pipeline exists."""
    from apache_beam.options.value_provider import RuntimeValueProvider
    files.use_options(None)
    RuntimeValueProvider.set_runtime_options(None)


@pytest.fixture
def memfs():
    MemFileSystem.clear()
    _forget_options()
    beam_files.remote_identity.cache_clear()  # identities are cached per process
    yield MemFileSystem
    assert not MemFileSystem.open_handles, "a remote file was left open"
    MemFileSystem.clear()


@pytest.fixture
def options(memfs):
    from apache_beam.options.pipeline_options import PipelineOptions
    files.use_options(PipelineOptions([]))


def _put(path, data: bytes):
    files.write_atomic(path, lambda f: f.write(data))


def _texts(n=120):
    with open(sample_path(), encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f][:n]


def _inputs(local_dir):
    """The same two inputs locally and in memfs: a Parquet file (3 row groups, one null text)
    and a gzipped JSONL file (one bad line). Returns (local paths, remote paths)."""
    texts = _texts()
    col = texts[:90]
    col[5] = None
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": list(range(90)), "text": col}), buf, row_group_size=30)
    lines = [json.dumps({"id": f"j{i}", "text": t}) for i, t in enumerate(texts[90:])]
    lines.insert(3, "{not json")
    blobs = {"a.parquet": buf.getvalue(),  # a name that reads as a glob, taken literally:
             "b[1].jsonl.gz": gzip.compress(("\n".join(lines) + "\n").encode())}
    local, remote = [], []
    for name, data in blobs.items():
        with open(os.path.join(local_dir, name), "wb") as f:
            f.write(data)
        _put(f"{ROOT}/in/{name}", data)
        local.append(os.path.join(local_dir, name))
        remote.append(f"{ROOT}/in/{name}")
    return local, remote


@pytest.fixture(scope="module")
def gpt2_bytes(tmp_path_factory):
    from corpustok import BytePairTokenizer
    path = str(tmp_path_factory.mktemp("tok") / "gpt2.json")
    BytePairTokenizer.from_hf(TEST_DATA / "gpt2" / "vocab.json",
                              TEST_DATA / "gpt2" / "merges.txt").save(path)
    with open(path, "rb") as f:
        return f.read()


def test_file_operations(memfs, options):
    _put(f"{ROOT}/d/x.txt", b"abc")
    _put(f"{ROOT}/d/sub/y.txt", b"de")
    assert files.match(f"{ROOT}/d/*.txt") == [f"{ROOT}/d/x.txt"]
    assert files.match(f"{ROOT}/d/x.txt") == [f"{ROOT}/d/x.txt"]
    assert files.match(f"{ROOT}/d/nothing*") == [] and files.match(f"{ROOT}/none") == []
    assert files.listdir(f"{ROOT}/d") == ["x.txt"]  # not the nested object
    # Remote globs follow the local rule: ** matches zero levels too, hidden names only
    # where named; a folder is a prefix holding objects, a glob is none.
    _put(f"{ROOT}/d/.h/z.txt", b"hidden")
    assert files.match(f"{ROOT}/d/**/*") == files.match(f"{ROOT}/d/**") == \
        [f"{ROOT}/d/sub/y.txt", f"{ROOT}/d/x.txt"]
    assert files.match(f"{ROOT}/d/.h/*") == [f"{ROOT}/d/.h/z.txt"]
    assert files.is_dir(f"{ROOT}/d") and not files.is_dir(f"{ROOT}/d/x.txt")
    assert not files.is_dir(f"{ROOT}/d/**") and not files.is_dir(f"{ROOT}/none")
    files.remove([f"{ROOT}/d/.h/z.txt"])
    assert files.read_bytes(f"{ROOT}/d/x.txt") == b"abc" and files.size(f"{ROOT}/d/x.txt") == 3
    before = files.identity(f"{ROOT}/d/x.txt")
    _put(f"{ROOT}/d/x.txt", b"abc")  # rewritten: a new modification time, a new identity
    beam_files.remote_identity.cache_clear()
    assert files.identity(f"{ROOT}/d/x.txt") != before
    with pytest.raises(OSError, match="ClientError"):  # the client's own error, as an OSError
        files.read_bytes(f"{ROOT}/d/missing.txt")

    def fail(f):
        f.write(b"partial")
        raise RuntimeError("writer died")
    with pytest.raises(RuntimeError):
        files.write_atomic(f"{ROOT}/d/z.txt", fail)
    assert sorted(memfs.objects) == [f"{ROOT}/d/sub/y.txt", f"{ROOT}/d/x.txt"]  # no leftovers
    files.remove([f"{ROOT}/d/x.txt"])
    assert not files.exists(f"{ROOT}/d/x.txt")
    with pytest.raises(OSError):
        files.size(f"{ROOT}/d/x.txt")


def _shard_tables(out):
    """Token tables of a run, keyed by (input file name, row range), source names stripped."""
    manifest = json.loads(files.read_bytes(files.join(out, RUN_MANIFEST)))
    tables = {}
    for e in manifest["shards"]:
        with files.parquet_file(files.join(out, e["file"])) as pf:
            t = pf.read().drop_columns(["source"])
        tables[(os.path.basename(e["source"]), tuple(e["rows"]))] = t
    return manifest, tables


def test_tokenize_remote_equals_local(memfs, tmp_path, gpt2_bytes):
    from apache_beam.options.pipeline_options import PipelineOptions
    files.use_options(PipelineOptions([]))  # only to upload the inputs; then unset again
    local_in, remote_in = _inputs(tmp_path)
    _put(f"{ROOT}/tok/gpt2.json", gpt2_bytes)
    _forget_options()
    local_tok = tmp_path / "gpt2.json"
    local_tok.write_bytes(gpt2_bytes)
    out = f"{ROOT}/out"
    kw = dict(shard_bytes=8000, eos="<|endoftext|>", write_rejects=True)
    patterns = [f"{ROOT}/in/*.parquet", remote_in[1]]

    local = tokenize(local_in, str(tmp_path / "out"), str(local_tok), **kw)
    _forget_options()
    remote = tokenize(patterns, out, f"{ROOT}/tok/gpt2.json", **kw)
    assert remote.ok and local.ok
    lm, lt = _shard_tables(str(tmp_path / "out"))
    rm, rt = _shard_tables(out)
    assert rm["totals"] == lm["totals"] and rm["totals"]["shards"] > 3
    assert rm["totals"]["rejects"] == {"bad_json": 1, "null_text": 1}
    assert rt.keys() == lt.keys()
    for key in lt:
        assert rt[key].equals(lt[key]), key
    assert any(p.startswith(f"{out}/{REJECTS_DIR}/") for p in memfs.objects)
    assert all("[" not in p for p in memfs.objects if p.startswith(out))  # names never globs

    v = verify_shards(out, load_tokenizer(f"{ROOT}/tok/gpt2.json"))
    assert v.ok, v.problems
    assert v.documents == rm["totals"]["documents"]

    # A rerun finds every shard complete and rewrites only the run manifest. It deletes the
    # temporary of the killed run whose lock it takes over and a shard its manifests list but
    # no longer produce (an old version of an input); it keeps files it cannot prove are its
    # own, even with a temporary's or a shard's name.
    shard_objects = {p: d for p, d in memfs.objects.items() if not p.endswith(RUN_MANIFEST)}
    dead = {"pid": 2 ** 22 + 7, "pid_start": 1, "host": socket.gethostname(), "started": 0,
            "run_id": "deadbeef0000"}
    _put(f"{out}/{LOCK_FILE}", json.dumps(dead).encode())
    _put(f"{out}/.tmp-corpustok-deadbeef0000-x.parquet.abcdef12", b"partial")
    users = {f"{out}/.tmp-mine": b"user", f"{out}/{REJECTS_DIR}/.tmp-notes": b"user"}
    for path, data in users.items():
        _put(path, data)
    old = json.loads(memfs.objects[f"{out}/{ENTRIES_DIR}/{rm['shards'][0]['shard']}.json"][0])
    name = "part-0123456789-00000000-0000000000-0000000001"
    stale = dict(old, shard=name, file=f"data/{name}.parquet")
    for path in (stale["file"], f"{REJECTS_DIR}/{name}.parquet"):
        _put(f"{out}/{path}", b"old")
    _put(f"{out}/{ENTRIES_DIR}/{stale['shard']}.json", json.dumps(stale).encode())
    _forget_options()
    again = tokenize(patterns, out, f"{ROOT}/tok/gpt2.json", **kw)
    assert again.counters.get("shards_skipped") == rm["totals"]["shards"]
    assert again.counters.get("shards_written", 0) == 0
    assert again.manifest["superseded"] == [stale["shard"]]
    left = {p: d[0] for p, d in memfs.objects.items() if not p.endswith(RUN_MANIFEST)}
    assert left == {**{p: d[0] for p, d in shard_objects.items()}, **users}
    _put(f"{out}/a-0123456789-0000000000-0000000001.parquet", b"user")  # not hidden: refused
    _forget_options()
    with pytest.raises(OtherJob, match="did not write"):
        tokenize(patterns, out, f"{ROOT}/tok/gpt2.json", **kw)


def test_train_remote_equals_local(memfs, options, tmp_path):
    local_in, _ = _inputs(tmp_path)
    info_local = train(local_in, str(tmp_path / "t.json"), vocab_size=400)
    _forget_options()
    info_remote = train([f"{ROOT}/in/*"], f"{ROOT}/tok/t.json", vocab_size=400)
    for key in ("documents", "bytes", "chunks"):
        assert info_remote[key] == info_local[key]
    assert load_tokenizer(f"{ROOT}/tok/t.json").to_dict() == \
        load_tokenizer(str(tmp_path / "t.json")).to_dict()
    assert not [p for p in memfs.objects if ".info-" in p]  # the info object is cleaned up
