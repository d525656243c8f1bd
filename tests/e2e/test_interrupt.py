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
from mobilemem import records
from mobilemem.rundir import RunDir, read_record

pytestmark = pytest.mark.slow

MODELS = {"run.json": records.RunFile, "judge-settings.json": records.JudgeSettingsFile,
          "summary.json": records.SummaryFile, "job.json": records.JobFile,
          "answer-response.json": records.AnswerResponseFile, "judgment.json": records.JudgmentFile,
          "metrics.json": records.MetricsFile, "error.json": records.ErrorFile,
          "index-response.json": records.IndexResponseFile, "memory_usage.json": records.MemoryUsageFile}
LINES = {"errors.jsonl": records.ErrorLine, "cleanup-errors.jsonl": records.ErrorLine,
         "results.jsonl": records.ResultLine}


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _validate_everything(run: RunDir) -> None:
    for path in run.root.rglob("*"):
        if path.parent.name == "sessions" and path.suffix == ".json":
            read_record(path, records.SessionFile)
        elif path.name in MODELS and "workspace" not in path.parts:
            read_record(path, MODELS[path.name])
        elif path.name in LINES:
            for line in path.read_text().splitlines():
                LINES[path.name].model_validate_json(line)
        elif path.suffix == ".json" and "trajectories" in path.parts:
            json.loads(path.read_text())


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
    _validate_everything(run)
