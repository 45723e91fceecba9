"""The allocator setting for job processes: set for the CLI and for local workers, never over a
user's own value, and the caller's environment restored after a run."""
import os
import subprocess
import sys

import pytest

from corpustok.pipeline.memory import ALLOCATOR_ENV, keep_freed_memory, workers_keep_freed_memory

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
    # The setting only reaches an allocator that starts after it; the CLI module must not
    # load pyarrow on import, and a process started afterwards must see the value.
    code = ("import sys\n"
            "from corpustok.pipeline import cli\n"
            "assert 'pyarrow' not in sys.modules\n"
            "from corpustok.pipeline.memory import keep_freed_memory\n"
            "keep_freed_memory()\n"
            "import subprocess\n"
            "print(subprocess.run([sys.executable, '-c', 'import os; print(os.environ[\"%s\"])'],"
            " capture_output=True, text=True, check=True).stdout.strip())\n" % KEY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == ALLOCATOR_ENV[KEY]
