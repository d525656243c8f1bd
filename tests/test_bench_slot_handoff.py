"""A tiny run of bench/slot_handoff.py, so the benchmark cannot silently break (no timing asserted)."""

import json
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow


def test_slot_handoff_benchmark_runs_and_reports(tmp_path):
    out = tmp_path / "figures.json"
    result = subprocess.run([sys.executable, "bench/slot_handoff.py", "--handoffs", "3", "--hold", "0.05",
                             "--slot-wait", "0.5", "--json", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "semaphore" in result.stdout and "global_slots" in result.stdout and "p90" in result.stdout
    figures = json.loads(out.read_text())
    assert (figures["db"], figures["handoffs"], figures["lease_expiry"]) == ("sqlite", 3, None)
    for kind in ("semaphore", "global_slots"):
        q = figures[kind]
        assert q["count"] == 3 and 0 <= q["median_ms"] <= q["p90_ms"] <= q["max_ms"]
