"""The house rules of docs/architecture.md, checked: no import cycle (function-local imports
counted) and no import from a later layer or pipeline subject folder into an earlier one."""
import subprocess
import sys

from tests.conftest import REPO


def test_no_import_cycle_and_no_upward_import():
    done = subprocess.run([sys.executable, str(REPO / "tools" / "import_graph.py")],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cycles counting function-local imports: 0" in done.stdout
    assert "upward imports between layers: 0" in done.stdout
