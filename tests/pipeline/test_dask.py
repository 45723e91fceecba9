"""The jobs on a real distributed engine: Beam's DaskRunner over a dask.distributed cluster of
worker processes, against the FnApiRunner's output, with a worker killed mid-run."""
import functools
import hashlib
import json
import os
import signal
import threading
import time
from pathlib import Path

import distributed  # noqa: F401  the test extra's dask[distributed]: missing is an error
import psutil  # a dependency of distributed
import pytest

import corpustok
from corpustok import BytePairTokenizer

DASK = ["--runner", "dask"]


class _SlowTokenizer(BytePairTokenizer):
    """GPT-2 that waits before each batch: a job long enough to kill a worker in."""

    delay = 0.0

    def encode_arrays(self, batch, **kw):
        time.sleep(self.delay)
        return super().encode_arrays(batch, **kw)


def slow_load(path, delay):
    """A tokenizer factory the Dask workers import from this module (by reference)."""
    tok = corpustok.load(path)
    tok.__class__ = _SlowTokenizer
    tok.delay = delay
    return tok


@pytest.fixture(scope="module")
def parquet_input(tmp_path_factory):
    """~4 MB of Parquet in 8 row groups: 8 or more shards at 0.5 MB."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq
    lines = (Path(__file__).parents[1] / "data" / "bpe_sample.txt").read_text().splitlines()
    rng = random.Random(7)
    texts = [" ".join(rng.choices(lines, k=6)) for _ in range(10000)]
    path = tmp_path_factory.mktemp("dask_in") / "docs.parquet"
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts}),
                   str(path), row_group_size=1250)
    return str(path)


def _folder(path):
    """Every file under ``path`` (relative name -> bytes)."""
    root = Path(path)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _shards(path):
    """The folder's files that a run writes (shards, entries, the run manifest), without the
    job record and lock, which carry the run's own id and time."""
    return {k: v for k, v in _folder(path).items()
            if not k.endswith(("job.json", "lock")) and "/.tmp-" not in "/" + k}


def _tokenize(src, out, tokenizer, beam_args=(), workers=2):
    from corpustok.pipeline.jobs.tokenize import tokenize
    return tokenize([src], out, tokenizer, shard_bytes=500_000, beam_args=list(beam_args),
                    workers=workers)


@pytest.fixture(scope="module")
def reference(parquet_input, gpt2_file, tmp_path_factory):
    """The FnApiRunner's output for the input, with a factory (same job id as slow_load's)."""
    out = str(tmp_path_factory.mktemp("dask_ref") / "out")
    r = _tokenize(parquet_input, out, functools.partial(corpustok.load, gpt2_file), workers=1)
    assert r.ok and r.manifest["totals"]["shards"] >= 8
    return _shards(out)


def test_dask_shards_equal_the_fnapi_runners_then_a_rerun_skips_every_shard(
        parquet_input, gpt2_file, reference, tmp_path):
    out = str(tmp_path / "out")
    spec = functools.partial(corpustok.load, gpt2_file)
    r = _tokenize(parquet_input, out, spec, DASK)
    assert r.ok and r.counters == {}  # Dask reports no metrics: the summary is the manifest's
    assert len(r.written) == r.manifest["totals"]["shards"] == \
        sum(k.startswith("data/") for k in reference)
    assert _shards(out) == reference
    again = _tokenize(parquet_input, out, spec, DASK)
    assert again.ok and again.written == [] and len(again.kept) == r.manifest["totals"]["shards"]
    assert _shards(out) == reference
    from corpustok.pipeline.jobs.tokenize import summary
    assert f"(0 written, {len(again.kept)} already complete)" in summary(again)


def _workers_of(pid):
    """The Dask worker processes (spawned by the nannies) under ``pid``."""
    return [p for p in psutil.Process(pid).children(recursive=True)
            if any("spawn_main" in a for a in p.cmdline())]


def test_a_worker_killed_mid_run_leaves_the_same_output(parquet_input, gpt2_file, reference,
                                                         tmp_path):
    out = tmp_path / "out"
    entries = out / ".corpustok" / "entries"
    done = {}
    job = threading.Thread(target=lambda: done.update(r=_tokenize(
        parquet_input, str(out), functools.partial(slow_load, gpt2_file, 0.4), DASK)))
    job.start()
    killed = None
    deadline = time.time() + 120
    while job.is_alive() and time.time() < deadline:
        written = len(list(entries.glob("*.json"))) if entries.is_dir() else 0
        workers = _workers_of(os.getpid())
        if written >= 1 and workers:
            killed = (workers[0].pid, written)
            os.kill(workers[0].pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    job.join(300)
    assert not job.is_alive()
    assert killed is not None, "the job ended before a worker could be killed"
    assert not psutil.pid_exists(killed[0]) or \
        psutil.Process(killed[0]).status() == psutil.STATUS_ZOMBIE
    r = done["r"]
    assert r.ok and killed[1] < r.manifest["totals"]["shards"]  # killed with work left
    assert _shards(str(out)) == reference  # every shard once, whole, byte-identical
    assert not [k for k in _folder(str(out)) if "/.tmp-" in "/" + k]  # no partial file


def test_train_on_dask_gives_the_default_runners_tokenizer(parquet_input, tmp_path):
    from corpustok.pipeline.jobs.train import train
    paths = {}
    for name, args in (("fnapi", []), ("dask", DASK)):
        paths[name] = tmp_path / f"{name}.json"
        info = train([parquet_input], str(paths[name]), 600, beam_args=args, workers=2)
        assert info["documents"] == 10000 and not info["errors"]
    assert paths["dask"].read_bytes() == paths["fnapi"].read_bytes()


def test_cli_joins_a_running_scheduler_and_reports_unreadable_inputs(
        parquet_input, gpt2_file, reference, tmp_path):
    from distributed import LocalCluster

    from corpustok.pipeline.cli import main
    from corpustok.pipeline.config import config_hash
    from corpustok.pipeline.output.layout import read_run_manifest
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 this is no Parquet file")
    out = tmp_path / "out"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        code = main(["tokenize", parquet_input, str(broken), "--out", str(out),
                     "--tokenizer", gpt2_file, "--shard-mb", "0.5", "--no-progress",
                     "--runner", "dask", "--dask-address", cluster.scheduler_address])
    assert code == 1  # COMPLETED_WITH_ERRORS: the broken input, named in the manifest
    manifest = read_run_manifest(str(out))
    assert [e["source"] for e in manifest["errors"]] == [str(broken)]
    # The shards equal the FnApiRunner's byte for byte. The CLI names its tokenizer by the
    # file, the reference by a factory (its to_dict's sha256): that is the only difference in
    # the job's identity, so the shard names differ by the configuration hash alone.
    ref_manifest = json.loads(reference[".corpustok/manifest.json"])
    assert config_hash(manifest["config"] | {"tokenizer_sha256": ref_manifest[
        "tokenizer_sha256"]}) == ref_manifest["shards"][0]["config"]
    # part-<input>-<configuration>-<first row>-<end row>: the configuration's part of names
    ref_part, cli_part = (m["shards"][0]["shard"].split("-")[2] for m in (ref_manifest,
                                                                            manifest))
    got = {k.replace(f"-{cli_part}-", f"-{ref_part}-"): v for k, v in _shards(str(out)).items()}
    data = sorted(k for k in reference if k.startswith("data/"))
    assert len(data) >= 8 and sorted(k for k in got if k.startswith("data/")) == data
    assert all(got[k] == reference[k] for k in data)
    same = ("config", "tokenizer_sha256", "file", "shard")  # the names and the identity
    entries = {e["rows"][0]: e for e in manifest["shards"]}
    assert len(entries) == len(ref_manifest["shards"]) == manifest["totals"]["shards"]
    for ref in ref_manifest["shards"]:
        e = entries[ref["rows"][0]]
        assert e["sha256"] == ref["sha256"] == \
            hashlib.sha256(got[ref["file"]]).hexdigest()
        assert {k: v for k, v in e.items() if k not in same} == \
            {k: v for k, v in ref.items() if k not in same}
    assert {k: v for k, v in manifest["totals"].items() if k != "errors"} == \
        {k: v for k, v in ref_manifest["totals"].items() if k != "errors"}


def test_a_dask_address_needs_the_dask_runner(parquet_input, gpt2_file, tmp_path, capsys):
    from corpustok.pipeline.cli import main
    code = main(["tokenize", parquet_input, "--out", str(tmp_path / "out"), "--tokenizer",
                 gpt2_file, "--dask-address", "tcp://127.0.0.1:1"])
    assert code == 2 and "needs --runner dask" in capsys.readouterr().err
