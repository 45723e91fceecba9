"""The environment of job processes: the allocator setting for the CLI and local workers, a safe
import path for the workers, never over a user's own value, the caller's environment restored
after a run."""
import os
import resource
import subprocess
import sys

import pyarrow as pa
import pytest

from corpustok.pipeline.runtime.workers import (PROCESS_ENV, WORKER_ENV, local_workers_env,
                                                process_env_defaults)
from tests.conftest import TEST_DATA

KEY = "MIMALLOC_PURGE_DELAY"


@pytest.fixture
def clean_env(monkeypatch):
    for key in WORKER_ENV:  # none of them set by the environment the tests run in
        monkeypatch.delenv(key, raising=False)
    return monkeypatch


def test_workers_setting_is_scoped(clean_env):
    with local_workers_env():
        assert all(os.environ[k] == v for k, v in WORKER_ENV.items())
    assert not any(key in os.environ for key in WORKER_ENV)


def test_user_value_kept(clean_env):
    clean_env.setenv(KEY, "250")
    with local_workers_env():
        assert os.environ[KEY] == "250"
    assert os.environ[KEY] == "250"
    process_env_defaults()
    assert os.environ[KEY] == "250"


def test_cli_sets_it_before_pyarrow_loads(clean_env):
    # The setting only reaches an allocator that starts after it: watch the moment the
    # `corpustok` command's main() first imports pyarrow, and what the variable was then.
    code = ("import os, sys\n"
            "seen = []\n"
            "class Watch:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'pyarrow' and not seen:\n"
            "            seen.append(os.environ.get(%r))\n"
            "sys.meta_path.insert(0, Watch())\n"
            "from corpustok.pipeline.cli import main\n"
            "assert main(['encode', '--tokenizer', sys.argv[1], 'hello world']) == 0\n"
            "print(seen)\n" % KEY)
    vocab = str(TEST_DATA / "bert-base-uncased" / "vocab.txt")
    out = subprocess.run([sys.executable, "-c", code, vocab], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()
    assert out[-1] == repr([PROCESS_ENV[KEY]])


@pytest.fixture(scope="module")
def linux_jemalloc():
    """corpustok picks jemalloc on Linux, where pip's pyarrow wheels build it: the Arrow
    pool tests skip elsewhere."""
    if not sys.platform.startswith("linux"):
        pytest.skip("jemalloc is chosen on Linux")
    if "jemalloc" not in pa.supported_memory_backends():  # the build's, whatever the pool
        pytest.skip("this pyarrow has no jemalloc")


@pytest.mark.parametrize("user_value", [None, "system"])
def test_cli_arrow_pool_is_jemalloc_unless_the_user_chose(linux_jemalloc, clean_env, user_value):
    # Arrow's default pool (mimalloc) gave each batch fresh pages to zero (decision 0045); the
    # console script picks jemalloc before pyarrow loads, and a user's own choice stands.
    if user_value:
        clean_env.setenv("ARROW_DEFAULT_MEMORY_POOL", user_value)
    code = ("import sys\n"
            "from corpustok.pipeline.cli import main\n"
            "assert main(['encode', '--tokenizer', sys.argv[1], 'hello world']) == 0\n"
            "import pyarrow as pa\n"
            "print(pa.default_memory_pool().backend_name)\n")
    vocab = str(TEST_DATA / "bert-base-uncased" / "vocab.txt")
    res = subprocess.run([sys.executable, "-c", code, vocab], capture_output=True, text=True,
                         check=True)
    assert res.stdout.strip().splitlines()[-1] == (user_value or "jemalloc")
    assert "Unsupported backend" not in res.stderr


def test_arrow_pool_keeps_freed_pages_for_the_next_shard(linux_jemalloc, clean_env):
    # Arrow's jemalloc returns freed pages after a second (its build's decay), and a shard's
    # buffers then fault in afresh; with the defaults a buffer freed and allocated again
    # after that long reuses the pages (minor faults counted by the OS).
    code = ("import resource, sys, time\n"
            "from corpustok.pipeline.runtime.workers import process_env_defaults\n"
            "process_env_defaults()\n"
            "import numpy as np, pyarrow as pa\n"
            "def touch():\n"
            "    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "    buf = pa.allocate_buffer(64 << 20)\n"
            "    np.frombuffer(buf, np.uint8)[::4096] = 1\n"
            "    del buf\n"
            "    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before\n"
            "first = touch()\n"
            "time.sleep(2.5)\n"
            "print(pa.default_memory_pool().backend_name, first, touch())\n")
    backend, first, again = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                           text=True, check=True).stdout.split()
    assert backend == "jemalloc"
    pages = (64 << 20) // resource.getpagesize()
    if int(first) < pages // 2:  # huge pages for everything (THP "always"): too few to compare
        pytest.skip(f"{first} faults for {pages} pages: the OS maps larger pages here")
    assert int(again) < int(first) // 10


def test_workers_run_next_to_a_folder_named_like_the_package(tmp_path):
    # A user who cloned the project into ./corpustok and runs from the folder above: Beam's
    # local workers start in that folder and must still import the installed package.
    (tmp_path / "corpustok").mkdir()
    (tmp_path / "corpustok" / "README.md").write_text("a clone\n")
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(f'{{"id": {i}, "text": "document number {i}"}}\n'
                            for i in range(40)))
    command = os.path.join(os.path.dirname(sys.executable), "corpustok")
    res = subprocess.run([command, "tokenize", str(docs), "--tokenizer",
                          str(TEST_DATA / "bert-base-uncased" / "vocab.txt"), "--out",
                          str(tmp_path / "out"), "--workers", "2", "--local-mode", "processes",
                          "--no-progress"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "documents  40" in res.stdout



def test_local_workers_receive_the_job_options(tmp_path):
    # Beam's FnApiRunner starts its local workers without the job's options unless told; a
    # remote filesystem that needs them (S3 with an endpoint) would fail there.
    import apache_beam as beam

    from corpustok.pipeline.runtime.runners import beam_options

    def record(x, folder):  # nested: pickled by value, the workers cannot import this module
        import os
        from apache_beam.options.value_provider import RuntimeValueProvider
        seen = (RuntimeValueProvider.runtime_options or {}).get("s3_endpoint_url")
        with open(os.path.join(folder, f"{os.getpid()}.txt"), "w") as f:
            f.write(str(seen))
        return x

    options, runner = beam_options(["--s3_endpoint_url=http://example.invalid:9000"], workers=2,
                                   local_mode="processes")
    with beam.Pipeline(runner=runner, options=options) as p:
        _ = p | beam.Create(range(8)) | beam.Reshuffle() | beam.Map(record, str(tmp_path))
    seen = {f.name: f.read_text() for f in tmp_path.iterdir()}
    assert seen and f"{os.getpid()}.txt" not in seen  # it ran in worker processes
    assert set(seen.values()) == {"http://example.invalid:9000"}


def test_gc_frozen_in_local_workers_only(tmp_path):
    # Frozen objects are never collected: fine in a worker process that exits after the job,
    # a leak in the caller's own process. Children started inside the block freeze; the
    # process that ran the block (an in-process job) does not.
    import gc

    from corpustok.pipeline.jobs.tokenize import tokenize
    from corpustok.pipeline.runtime.workers import freeze_in_local_worker

    code = ("import gc\nfrom corpustok.pipeline.runtime.workers import freeze_in_local_worker\n"
            "freeze_in_local_worker()\nprint(gc.get_freeze_count() > 0)\n")

    def child():
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True).stdout.strip()

    assert child() == "False"
    before = gc.get_freeze_count()
    with local_workers_env():
        assert child() == "True"
        freeze_in_local_worker()
        assert gc.get_freeze_count() == before
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(f'{{"id": {i}, "text": "document {i}"}}\n' for i in range(5)))
    r = tokenize([str(docs)], str(tmp_path / "out"),
                 str(TEST_DATA / "bert-base-uncased" / "vocab.txt"))
    assert r.ok and gc.get_freeze_count() == before
