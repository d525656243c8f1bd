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
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    for shown in ("makespan_ratio", "ms per model request", "over 3 runs: min", "CPU floor =", "503s answered",
                  "ms per task run"):
        assert shown in result.stdout
    slow, idle = json.loads(out.read_text())
    assert slow["questions"] == idle["questions"] == 4 and slow["requests"] > 0
    assert slow["makespan_ratio"] >= 1.0 - 1e-9  # nothing beats the zero-overhead schedule
    assert 0 < slow["answer_concurrency"] <= 16 and idle["runner_cpu_ms_per_request"] > 0
    # the default: 3 runs under 1 s of latency, and the figures shown are the median run's
    assert (slow["repeat"], len(slow["runs"]), idle["repeat"], len(idle["runs"])) == (3, 3, 1, 1)
    ratios = sorted(run["makespan_ratio"] for run in slow["runs"])
    assert (slow["makespan_ratio_min"], slow["makespan_ratio_median"], slow["makespan_ratio_max"]) == tuple(ratios)
    assert slow["makespan_ratio"] == ratios[1]
    for figures in (*slow["runs"], *idle["runs"]):
        assert_sane_noise(figures)


def assert_sane_noise(figures: dict) -> None:
    window, floor = figures["window_cpu_s"], figures["cpu_floor_s"]
    assert set(window) == {"runner", "server", "simulator"} and window["runner"] > 0 and floor > 0
    assert floor == pytest.approx(sum(window.values()) / figures["cores"])
    assert floor <= figures["measured_makespan_s"] + 0.5  # CPU inside the span, over the cores, fits the span
    bound = max(figures["ideal_makespan_s"], floor)
    assert figures["makespan_ratio_vs_floor"] == pytest.approx(figures["measured_makespan_s"] / bound)
    # every client retry after a 503 is a 503 the server logged (which also counts those never retried)
    assert figures["server_503s"] >= figures["after_503"] >= 0 and figures["other"] >= 0
    assert (figures["wait_s"] > 0) == (figures["after_503"] + figures["other"] > 0)
    created = figures["created"]
    assert figures["db"] == "sqlite" and figures["database_cpu_s"] is None
    assert created["flow_runs"] == 3 and created["task_runs"] >= 2 * 2 + 2 + 4 * 2 and created["artifacts"] > 0
    assert figures["server_cpu_ms_per_task_run"] == pytest.approx(1000 * figures["server_cpu_s"] / created["task_runs"])
    assert figures["server_cpu_ms_per_artifact"] > 0
