"""``tools/job_trace.py``: a job's timeline by step and worker thread (issue 45's tool)."""
import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import GPT2

TOOL = Path(__file__).resolve().parents[2] / "tools" / "job_trace.py"


def test_the_trace_times_every_step_of_a_two_worker_job(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": str(k), "text": f"document {k} " * 50}) + "\n"
                           for k in range(200)))
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, str(TOOL), "--events", "tokenize", str(src),
                          "--tokenizer", str(GPT2), "--out", str(out), "--workers", "2",
                          "--shard-mb", "0.002", "--no-progress"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    shards = len(list((out / "data").glob("*.parquet")))
    assert shards > 1
    # one event per shard read, tokenized and written, one summary line a worker
    for step in ("read", "tokenize", "write"):
        assert sum(f"  {step} " in line for line in lines) == shards, run.stdout
    assert any(line.startswith("first worker began at") for line in lines)
    assert any(line.startswith("CPU by step: read") for line in lines)
    assert "apitools" not in run.stderr
