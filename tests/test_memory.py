"""The allocator setting for job processes: set for the CLI and for local workers, never over a
user's own value, and the caller's environment restored after a run."""
import os
import subprocess
import sys

import pytest

from corpustok.pipeline.memory import ALLOCATOR_ENV, keep_freed_memory, workers_keep_freed_memory
from conftest import TEST_DATA

KEY = "MIMALLOC_PURGE_DELAY"


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv(KEY, raising=False)
    return monkeypatch


def test_workers_setting_is_scoped(clean_env):
    with workers_keep_freed_memory():
        assert os.environ[KEY] == ALLOCATOR_ENV[KEY]
    assert KEY not in os.environ


def test_user_value_kept(clean_env):
    clean_env.setenv(KEY, "250")
    with workers_keep_freed_memory():
        assert os.environ[KEY] == "250"
    assert os.environ[KEY] == "250"
    keep_freed_memory()
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
    assert out[-1] == repr([ALLOCATOR_ENV[KEY]])
