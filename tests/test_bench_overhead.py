"""A tiny run of bench/overhead.py, so the benchmark cannot silently break."""

import json
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow


def test_overhead_benchmark_runs_and_reports(tmp_path):
    out = tmp_path / "figures.json"
    result = subprocess.run(
        [sys.executable, "bench/overhead.py", "--users", "2", "--sessions", "2", "--turns", "6", "--images", "2",
         "--questions", "2", "--latency", "0.05", "0", "--cache", str(tmp_path / "cache"), "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "makespan_ratio" in result.stdout and "ms per model request" in result.stdout
    slow, idle = json.loads(out.read_text())
    assert slow["questions"] == idle["questions"] == 4 and slow["requests"] > 0
    assert slow["makespan_ratio"] >= 1.0 - 1e-9  # nothing beats the zero-overhead schedule
    assert 0 < slow["answer_concurrency"] <= 16 and idle["runner_cpu_ms_per_request"] > 0
