"""A dead run is recognisable and leaves nothing running: `kill -9` of the runner mid-run, then its
Prefect server and every other descendant are gone, and `summarize` says the run is not alive and
reports the questions it never finished as not attempted."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from mobilemem.process_guard import descendants
from mobilemem.records import ResultLine, SummaryFile
from mobilemem.rundir import RunDir, read_lines, read_record

pytestmark = pytest.mark.slow


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_kill_9_leaves_no_process_and_summarize_says_the_run_is_dead(sample_root, simulator, tmp_path):
    simulator.reset()
    simulator.latency_s = 0.5  # slow enough to be killed mid-run
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"), "LLM_API_KEY": "sk-dead-run-test",
           "LLM_BASE_URL": simulator.base_url}
    env.pop("PREFECT_API_URL", None)
    runner = subprocess.Popen([sys.executable, str(ROOT / "flows" / "mobilemem.py"), "--dataset", str(sample_root),
                               "--output", str(tmp_path / "out")], env=env, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=(tmp_path / "console.err").open("w"))
    run = RunDir.for_output(tmp_path / "out", "qwen3.8-max")
    try:
        _wait(lambda: run.run.is_file() and list(run.root.glob("users/*/sessions/*.json")), 120, "the first session")
        children = descendants(runner.pid)
        assert len(children) >= 2  # the watchdog and Prefect's embedded server, at least
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        simulator.wait_idle()
        simulator.reset()
    _wait(lambda: not [p for p, started in children.items() if _alive(p, started)], 15, "the descendants to end")
    # the console the runner shared with its children: its progress lines only, no server noise
    noise = [line for line in (tmp_path / "console.err").read_text().splitlines() if " user " not in line]
    assert noise == []
    done = subprocess.run([sys.executable, str(ROOT / "flows" / "mobilemem.py"), "summarize", str(run.root)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "is not alive: its process is gone" in done.stderr and f"pid {runner.pid} on " in done.stderr
    summary = read_record(run.summary, SummaryFile)
    results = read_lines(run.results, ResultLine)
    assert summary.state == "running" and summary.not_attempted == sum(r.status == "not_run" for r in results) > 0
    assert json.loads(run.run.read_text())["pid"] == runner.pid


def _alive(pid: int, started: str) -> bool:
    from mobilemem.process_guard import _start_time

    return _start_time(pid) == started
