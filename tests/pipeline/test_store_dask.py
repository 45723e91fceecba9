"""The tokenize job on a Dask cluster of separate processes with no shared disk: ``dask
scheduler`` and two ``dask worker`` processes, each in a folder of its own with its own
``HOME`` and no AWS environment, the job given only ``s3://`` paths (SeaweedFS, tests/store.py)
and the driver's S3 options, which reach the workers with the pipeline. Its objects equal a
local FnApiRunner run's of the same inputs byte for byte; a worker killed mid-run and a killed
driver leave a folder that a rerun completes to the same bytes, with no other object.

Marked ``store`` (``.ci/run`` runs them).
"""
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.store import free_ports
from tests.pipeline.test_store import REPO, _cli, _written, corpus, store, uploaded  # noqa: F401 fixtures

pytestmark = pytest.mark.store
DASK = Path(sys.executable).parent / "dask"


def _clean_env(home):
    """A worker's environment: this interpreter's code path, its own HOME, no AWS_* (the
    store's options come with the job) and no path of the driver's."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "PYTEST", "TMP")) and k not in ("OLDPWD", "PWD")}
    return {**env, "HOME": str(home), "PYTHONPATH": str(REPO), "PYTHONSAFEPATH": "1"}


@pytest.fixture
def cluster(tmp_path_factory):
    """A scheduler and two single-thread workers (no nanny: a killed worker stays dead)."""
    port, = free_ports(1)
    address = f"tcp://127.0.0.1:{port}"
    procs = []

    def start(name, args):
        home = tmp_path_factory.mktemp(name)
        log = open(home / "log", "wb")
        procs.append(subprocess.Popen([str(DASK), *args], cwd=home, env=_clean_env(home),
                                      stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True))
        return procs[-1]

    start("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", str(port),
                        "--no-dashboard"])
    workers = [start(f"worker{i}", ["worker", address, "--nthreads", "1", "--no-nanny",
                                    "--no-dashboard", "--name", f"w{i}"]) for i in range(2)]
    from distributed import Client
    with Client(address, timeout=60) as c:
        c.wait_for_workers(2, timeout=60)
    yield address, workers
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


ARGS = ["--shard-mb", "0.06", "--rejects", "--eos", "<|endoftext|>"]


def _job(uploaded, out):
    return [f"{uploaded}/in/**", "--tokenizer", f"{uploaded}/tok/gpt2.json", *ARGS,
            "--out", f"{uploaded}/{out}"]


@pytest.fixture(scope="module")
def reference(store, uploaded):
    """The FnApiRunner's objects for the same s3:// inputs, tokenizer and options."""
    run = _cli([*_job(uploaded, "out-dask-ref"), "--workers", "1"], store)
    assert run.wait(300) == 0, run.stderr.read().decode()
    return _written(store, "job/out-dask-ref")


def _dask_cli(uploaded, out, store, address):
    return _cli([*_job(uploaded, out), "--runner", "dask", "--dask-address", address], store)


def _wait_entries(store, prefix, n, proc, timeout=300):
    deadline = time.monotonic() + timeout
    while len(store.keys(f"{prefix}/.corpustok/entries/")) < n:
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_cluster_of_processes_writes_the_local_runs_bytes(store, uploaded, reference,
                                                           cluster):
    address, _ = cluster
    run = _dask_cli(uploaded, "out-dask", store, address)
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err.decode()
    assert _written(store, "job/out-dask") == reference
    assert "shards" in out.decode() and "written" in out.decode()
    from corpustok.pipeline.runtime.runners import beam_options, where_it_runs
    options, runner = beam_options(["--runner", "dask", f"--dask_client_address={address}",
                                    *store.beam_args])
    said = where_it_runs(options, runner, f"{uploaded}/out-dask")
    assert address in said and store.endpoint in said  # what the driver says it runs on


def test_a_worker_killed_mid_run_then_a_rerun_completes(store, uploaded, reference, cluster):
    address, workers = cluster
    shards = sum(k.startswith("data/") for k in reference)
    run = _dask_cli(uploaded, "out-dask-wk", store, address)
    kill_after = random.Random(2).randrange(1, shards // 2)
    assert _wait_entries(store, "job/out-dask-wk", kill_after, run), "ended before the kill"
    workers[0].kill()
    code = run.wait(300)  # finished on the other worker, or failed with a message
    err = run.stderr.read().decode()
    assert code in (0, 3), err
    if code == 3:
        assert "the tokenize job failed" in err
    again = _dask_cli(uploaded, "out-dask-wk", store, address)
    assert again.wait(300) == 0, again.stderr.read().decode()
    assert _written(store, "job/out-dask-wk") == reference


def test_a_killed_driver_leaves_no_orphan_after_the_rerun(store, uploaded, reference, cluster):
    address, _ = cluster
    run = _dask_cli(uploaded, "out-dask-dr", store, address)
    assert _wait_entries(store, "job/out-dask-dr", 2, run), "ended before the kill"
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    again = _dask_cli(uploaded, "out-dask-dr", store, address)
    assert again.wait(300) == 0, again.stderr.read().decode()
    after = _written(store, "job/out-dask-dr")
    assert after == reference
    time.sleep(5)  # tasks of the killed driver still running would write now
    assert _written(store, "job/out-dask-dr") == reference
    assert not [k for k in store.keys("job/out-dask-dr/") if k.endswith("/lock")]
