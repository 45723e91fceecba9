"""A ``corpustok`` process's start-up (pipeline/runtime/startup.py): the collector pause, the
packages it skips, its environment and when the process started."""
import gc
import os
import subprocess
import sys
import time

import pytest

from corpustok.pipeline.runtime import startup
from corpustok.pipeline.runtime.startup import start_up_collector, started
from tests.conftest import GPT2


def _python(code):
    """Run ``code`` in a fresh interpreter (what a process starts with is the subject here);
    it must succeed."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return out


def test_paused_until_started_then_frozen_and_running():
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    try:
        with start_up_collector():
            assert not gc.isenabled()
            started()
            assert gc.isenabled()
            assert gc.get_freeze_count() >= frozen
            gc.disable()  # a caller's own choice after start-up is left alone
            started()
            assert not gc.isenabled()
            gc.enable()
        assert gc.isenabled()
    finally:
        gc.unfreeze()


def test_a_collector_the_caller_disabled_stays_disabled():
    gc.disable()
    try:
        with start_up_collector():
            started()
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_console_script_ends_start_up(tmp_path):
    """Through the console script's function: a tokenize job re-enables the collector once its
    tokenizer is loaded; the job's result is the same."""
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "text": "hello world"}\n', encoding="utf-8")
    code = (
        "import gc, sys\n"
        "from corpustok.pipeline.cli import commands\n"
        "from corpustok.pipeline.cli.entry import run\n"
        "seen = []\n"
        "orig = commands._tokenizer_loaded\n"
        "def hook(args, tok):\n"
        "    seen.append(gc.isenabled())\n"
        "    orig(args, tok)\n"
        "    seen.append(gc.isenabled())\n"
        "commands._tokenizer_loaded = hook\n"
        f"sys.argv = ['corpustok', 'tokenize', {str(src)!r}, '--tokenizer', {str(GPT2)!r}, "
        f"'--out', {str(tmp_path / 'out')!r}, '--no-progress', '--workers', '1']\n"
        "rc = run()\n"
        "print(seen, rc, gc.isenabled())\n")
    out = _python(code)
    assert out.stdout.strip().splitlines()[-1] == "[False, True] 0 True"


def test_other_packages_numba_extensions_are_skipped_and_kernels_still_run():
    """After skip_numba_extensions (the console script and local workers call it), Numba
    compiles and runs without importing any installed ``numba_extensions`` entry point's
    module (awkward's, where gigatoken is installed)."""
    code = (
        "import sys\n"
        "from importlib.metadata import entry_points\n"
        "from corpustok.pipeline.runtime.startup import skip_numba_extensions\n"
        "skip_numba_extensions()\n"
        "from numba import njit\n"
        "f = njit(lambda x: x + 1)\n"
        "mods = [e.module.split('.')[0] for e in entry_points(group='numba_extensions')]\n"
        "print(f(41), [m for m in mods if m in sys.modules])\n")
    out = _python(code)
    assert out.stdout.split() == ["42", "[]"]


def test_console_script_starts_numpy_without_blas_threads():
    """The console script sets ``OPENBLAS_NUM_THREADS=1`` before numpy is first imported (its
    import of the command's modules leaves numpy out), so numpy's OpenBLAS starts no threads
    of its own; a value the user set is kept (3: OpenBLAS starts threads, up to the cores)."""
    code = (
        "import os, sys\n"
        "from corpustok.pipeline.cli import entry\n"
        "before = 'numpy' in sys.modules\n"
        "sys.argv = ['corpustok', '--version']\n"
        "try:\n"
        "    entry.run()\n"
        "except SystemExit:\n"
        "    pass\n"
        "import numpy\n"
        "task = '/proc/self/task'  # Linux: a folder per thread\n"
        "threads = len(os.listdir(task)) if os.path.isdir(task) else -1\n"
        "print(before, os.environ.get('OPENBLAS_NUM_THREADS'), threads)\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**env, **extra}) for extra in ({}, {"OPENBLAS_NUM_THREADS": "3"})]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr[-2000:] + runs[1].stderr[-2000:]
    ours, kept = (r.stdout.split()[-3:] for r in runs)
    assert ours[:2] == ["False", "1"] and kept[:2] == ["False", "3"]
    if (os.cpu_count() or 1) > 1 and int(ours[2]) >= 0:  # no more threads than cores
        assert int(kept[2]) > int(ours[2])  # its threads follow the setting


def test_the_console_script_runs_a_local_job_without_pandas(tmp_path):
    """The console script makes pandas, pymongo and bson unimportable
    (``skip_unused_packages``), and boto3 with botocore for a local tokenize job
    (``skip_s3_client``): the job (Beam, pyarrow and the tokenizer loaded, shards written)
    completes without them and prints nothing about them, and an import of one fails with a
    message naming why; with a ``--runner`` named, they stay importable, and boto3 stays for
    a job with an s3:// argument, for ``--append`` (the earlier inputs come from the job's
    record) and for the other commands (``verify --inputs`` reads paths from a manifest).
    boto3 comes with the test extra's apache-beam[aws]."""
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "text": "hello world"}\n{"id": "b", "text": "a second"}\n')
    code = (
        "import sys\n"
        "from corpustok.pipeline.cli.entry import run\n"
        f"sys.argv = ['corpustok', 'tokenize', {str(src)!r}, '--tokenizer', {str(GPT2)!r}, "
        f"'--out', {str(tmp_path / 'out')!r}, '--no-progress']\n"
        "rc = run()\n"
        "loaded = any(m in sys.modules for m in ('pandas', 'pymongo', 'bson', 'boto3',\n"
        "                                        'botocore'))\n"
        "import apache_beam.io.mongodbio as mongo\n"
        "why = []\n"
        "for name in ('pandas', 'pymongo', 'bson', 'boto3', 'botocore'):\n"
        "    try:\n"
        "        __import__(name)\n"
        "        why.append('imported')\n"
        "    except ImportError as e:\n"
        "        why.append(('skip_s3_client' if name.startswith('boto') else\n"
        "                    'skip_unused_packages') in str(e))\n"
        "print(rc, loaded, mongo.MongoClient is None, *why)\n")
    out = _python(code)
    assert out.stdout.split()[-8:] == ["0", "False", "True"] + ["True"] * 5
    for name in ("bson", "pandas", "boto", "S3"):
        assert name not in out.stderr, out.stderr
    kept = _python("import sys\n"
                   "from corpustok.pipeline.runtime.startup import skip_unused_packages\n"
                   "skip_unused_packages(['tokenize', 'x', '--runner', 'dask'])\n"
                   "import pandas, pymongo\n"
                   "print('pandas' in sys.modules, 'pymongo' in sys.modules)\n")
    assert kept.stdout.split() == ["True", "True"]
    cases = [("tokenize", None, ["tokenize", "in.parquet", "--out", "o"], True),
             ("tokenize", None, ["tokenize", "s3://bucket/in.parquet", "--out", "o"], False),
             ("tokenize", None, ["tokenize", "in.parquet", "--out=s3://bucket/o"], False),
             ("tokenize", "append", ["tokenize", "in.parquet", "--out", "o", "--append"],
              False),
             ("tokenize", None, ["tokenize", "in.parquet", "--out", "o", "--runner", "x"],
              False),
             ("verify", None, ["verify", "o", "--inputs"], False),
             ("train", None, ["train", "in.txt", "--out", "o"], True)]
    for command, mode, argv, blocked in cases:
        s3 = _python("import sys, types\n"
                     "from corpustok.pipeline.runtime.startup import skip_s3_client\n"
                     f"skip_s3_client(types.SimpleNamespace(command={command!r}, "
                     f"mode={mode!r}), {argv!r})\n"
                     "from apache_beam.io.aws import s3io\n"
                     "print('boto3' in sys.modules, s3io.BOTO3_INSTALLED)\n")
        assert s3.stdout.split()[-2:] == [str(not blocked)] * 2, (argv, s3.stdout, s3.stderr)


def test_the_process_start_is_known_and_noted_by_the_console_script_only():
    """``process_age`` is the process's age from the OS: a fresh interpreter is young, and
    ages as it sleeps; ``process_began`` is None until the console script notes the start
    (``note_process_start``), then puts it on ``perf_counter``'s clock. Linux (/proc) only."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the age comes from /proc: elsewhere the time line counts from the job")
    out = _python(
        "import time\n"
        "from corpustok.pipeline.runtime.startup import (note_process_start, process_age,\n"
        "                                                process_began)\n"
        "a = process_age()\n"
        "time.sleep(0.5)\n"
        "b = process_age()\n"
        "before = process_began()\n"
        "note_process_start()\n"
        "print(a, b, before, time.perf_counter() - process_began())\n")
    a, b, before, since = out.stdout.split()
    a, b, since = float(a), float(b), float(since)
    assert 0 < a < 60 and 0.45 <= b - a < 5
    assert before == "None" and abs(since - b) < 0.1


def test_an_implausible_process_age_is_not_counted(monkeypatch):
    """A clock that disagrees with /proc's (an age of days when the script begins) is not
    taken as the start: the time line then counts from the job, as without /proc."""
    monkeypatch.setattr(startup, "_began", None)
    monkeypatch.setattr(startup, "process_age", lambda: 3 * 86400.0)
    startup.note_process_start()
    assert startup.process_began() is None
    monkeypatch.setattr(startup, "process_age", lambda: 1.25)
    startup.note_process_start()
    assert 1.25 <= time.perf_counter() - startup.process_began() < 2
