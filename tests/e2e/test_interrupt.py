"""SIGINT and SIGTERM in the middle of a run: completed files stay valid, the run says it was
interrupted, summary.json covers what completed, exit 130, and no process is left behind."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from e2e.runs import validate_run_files
from mobilemem import records
from mobilemem.rundir import RunDir, read_record

pytestmark = pytest.mark.slow

def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_mid_run(sample_root, tmp_path, signum):
    sim_log = tmp_path / "sim.out"
    simulator = subprocess.Popen([sys.executable, "-m", "mobilemem.simulator", "--port", "0", "--latency", "0.3"],
                                 stdout=subprocess.PIPE, stderr=sim_log.open("w"), text=True, start_new_session=True)
    try:
        base_url = simulator.stdout.readline().split()[-1]
        env = {**os.environ, "LLM_API_KEY": "sk-interrupt-test", "LLM_BASE_URL": base_url}
        env.pop("PREFECT_API_URL", None)
        runner = subprocess.Popen([sys.executable, "flows/mobilemem.py", "--dataset", str(sample_root), "--output",
                                   str(tmp_path / "out")], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, start_new_session=True)
        run = RunDir.for_output(tmp_path / "out", "qwen3.8-max")
        deadline = time.monotonic() + 120
        while not list(run.root.glob("users/*/questions/*/answer-response.json")):
            assert runner.poll() is None, runner.stderr.read()
            assert time.monotonic() < deadline, "the run never reached its answers"
            time.sleep(0.2)
        runner.send_signal(signum)
        _, stderr = runner.communicate(timeout=120)
        assert runner.returncode == 130, stderr
        assert "Traceback" not in stderr
        deadline = time.monotonic() + 30
        while _group_alive(runner.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _group_alive(runner.pid), "the runner left processes behind"
    finally:
        os.killpg(simulator.pid, signal.SIGTERM)
        simulator.wait(timeout=20)
    manifest = read_record(run.run, records.RunFile)
    assert manifest.state == "interrupted" and manifest.finished_at is not None
    summary = read_record(run.summary, records.SummaryFile)
    assert summary.state == "interrupted" and summary.expected == 9 and summary.scored < 9
    validate_run_files(run)


def test_sigterm_while_the_embedded_server_starts(sample_root, tmp_path):
    """The signal lands while Prefect's embedded server is starting (its process exists, the run has
    not begun): exit 130 in one line, no run folder left claimed, no process left behind."""
    import psutil

    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)
    runner = subprocess.Popen([sys.executable, "flows/mobilemem.py", "--dataset", str(sample_root), "--output",
                               str(tmp_path / "out"), "--simulate"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not any("uvicorn" in " ".join(c.cmdline()) for c in psutil.Process(runner.pid).children(recursive=True)):
        assert runner.poll() is None, runner.stderr.read()
        assert time.monotonic() < deadline, "the embedded server never started"
        time.sleep(0.05)
    runner.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    _, stderr = runner.communicate(timeout=120)
    assert runner.returncode == 130 and time.monotonic() - sent < 30, stderr
    assert stderr.splitlines()[-1].startswith("mobilemem: interrupted") and "Traceback" not in stderr
    assert not RunDir.for_output(tmp_path / "out", "qwen3.8-max").root.exists()
    deadline = time.monotonic() + 30
    while _group_alive(runner.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _group_alive(runner.pid), "the runner left processes behind"
