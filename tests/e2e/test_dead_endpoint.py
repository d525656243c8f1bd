"""The endpoint dies (SIGKILL) or freezes (SIGSTOP) while the run is answering: the CLI, run as a
subprocess against the simulator run as another, ends by itself within a bound, every selected
question is scored or a gap with its true reason, and the runner does not spin while it waits.

The signal goes to the simulator as soon as its request log shows a finished answer request, when
other requests are streaming (four users at once) and the openai SDK may be draining one that just
ended: a dead peer read there again used to spin the event loop for ever."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import ROOT
from generate_sample import generate
from mobilemem import records
from mobilemem.dataset import load_dataset
from mobilemem.rundir import RunDir, read_lines, read_record

pytestmark = pytest.mark.slow

GUARD_S = 90  # only against a hang, before the signal and after it
BUDGET_S = 5.0  # the freeze variant's step budgets (the read timeout is longer: the budgets must act)
REASONS = {"KILL": ("connection error",), "STOP": ("timeout", "budget exceeded")}


@pytest.fixture(scope="module")
def four_users(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("four-users") / "MobileMem-Omni"
    generate(out, users=4, sessions=2, extract=True)
    return out


def _config(path: Path, budget_s: float) -> Path:
    path.write_text(f"candidate:\n  request_timeout_s: 60\n  session_timeout_s: {budget_s}\n"
                    f"  answer_timeout_s: {budget_s}\njudge:\n  request_timeout_s: 60\n  timeout_s: {budget_s}\n")
    return path


def _answered(log: Path) -> bool:
    lines = log.read_text().splitlines() if log.is_file() else []
    return any(json.loads(line)["role"] == "answer" for line in lines if line.endswith("}"))


def _cpu(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


def _watch(runner: subprocess.Popen, errors: Path) -> dict[str, float]:
    """Wall and CPU time of the runner from now to its first errors.jsonl line and to its exit."""
    proc, start = psutil.Process(runner.pid), time.monotonic()
    cpu = start_cpu = _cpu(proc)
    seen: dict[str, float] = {}
    while runner.poll() is None:
        if time.monotonic() - start > GUARD_S:
            used = _cpu(proc) - start_cpu
            os.killpg(runner.pid, signal.SIGKILL)
            pytest.fail(f"the run did not end within {GUARD_S} s of the signal (CPU {used:.0f} s meanwhile)")
        cpu = _cpu(proc)
        if "first_gap_wall" not in seen and errors.is_file() and errors.read_text().strip():
            seen.update(first_gap_wall=time.monotonic() - start, first_gap_cpu=cpu - start_cpu)
        time.sleep(0.05)
    return {**seen, "wall": time.monotonic() - start, "cpu": cpu - start_cpu}


def _start(dataset: Path, tmp_path: Path, signame: str):
    log = tmp_path / "simulator.jsonl"
    simulator = subprocess.Popen([sys.executable, "-m", "mobilemem.simulator", "--port", "0", "--latency", "0.4",
                                  "--log", str(log)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                 start_new_session=True)
    base_url = simulator.stdout.readline().split()[-1]
    env = {**os.environ, "LLM_API_KEY": "sk-dead-endpoint-test", "LLM_BASE_URL": base_url}
    env.pop("PREFECT_API_URL", None)
    config = _config(tmp_path / "budgets.yaml", BUDGET_S if signame == "STOP" else 60)
    runner = subprocess.Popen([sys.executable, "flows/mobilemem.py", "--dataset", str(dataset), "--output",
                               str(tmp_path / "out"), "--config", str(config)], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    return simulator, runner, log


def _run_until_signalled(dataset: Path, tmp_path: Path, signame: str) -> tuple[RunDir, dict[str, float], str]:
    simulator, runner, log = _start(dataset, tmp_path, signame)
    run = RunDir.for_output(tmp_path / "out", "qwen3.8-max")
    try:
        deadline = time.monotonic() + GUARD_S
        while not _answered(log):
            assert runner.poll() is None, runner.stderr.read()
            assert time.monotonic() < deadline, "the run never reached its answers"
            time.sleep(0.02)
        os.killpg(simulator.pid, getattr(signal, f"SIG{signame}"))
        watched = _watch(runner, run.errors)
        stderr = runner.stderr.read()
        assert runner.returncode in (0, 4), stderr[-3000:]  # completed (4: before any question was scored)
    finally:
        for process in (runner, simulator):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGCONT)  # a frozen simulator resumes, and then dies
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=GUARD_S)
    return run, watched, stderr


def _check_outcomes(run: RunDir, dataset: Path, reasons: tuple[str, ...]) -> None:
    selected = {q.question_id: u.user_id for u in load_dataset(dataset).users for q in u.questions}
    results = {line.question_id: line for line in read_lines(run.results, records.ResultLine)}
    assert set(results) == set(selected)
    gaps = [qid for qid, line in results.items() if line.status != "scored"]
    assert gaps, "the signal cost no question: it came too late to test anything"
    for qid, line in results.items():
        folder = run.user(selected[qid]).question(qid)
        assert not (folder.error.is_file() and folder.metrics.is_file()), qid
        if line.status == "scored":
            continue
        assert line.status in ("history", "index", "answer", "judge"), (qid, line.status)
        error = read_record(folder.error, records.ErrorFile)
        assert any(reason in error.reason for reason in reasons), (qid, error.reason)
    logged = read_lines(run.errors, records.ErrorLine)
    assert logged and all(line.stage in ("ingest", "answer", "judge") for line in logged)
    assert {e.id for e in logged} >= {read_record(run.user(selected[q]).question(q).error,
                                                       records.ErrorFile).failure.error_id for q in gaps} - {None}


@pytest.mark.parametrize("signame", ["KILL", "STOP"])
def test_an_endpoint_dying_or_freezing_mid_run_ends_the_run_with_true_gaps(four_users, tmp_path, signame):
    run, watched, stderr = _run_until_signalled(four_users, tmp_path, signame)
    assert "Traceback" not in stderr
    # the console holds the progress lines only: the libraries' warnings about failed calls go to run.log
    assert [line for line in stderr.splitlines()
            if " user " not in line and not line.startswith("mobilemem: no question was scored")] == []
    _check_outcomes(run, four_users, REASONS[signame])
    # a dead endpoint fails everything at once; a frozen one holds each step to its budget, no longer
    assert watched["wall"] < (45 if signame == "KILL" else 4 * BUDGET_S + 45)
    assert watched["cpu"] < 0.6 * watched["wall"]  # finishing the run, not spinning (that takes it all)
    if signame == "STOP":  # signal to the first budget that ran out: nothing but waiting
        assert watched["first_gap_wall"] <= BUDGET_S + 10
        assert watched["first_gap_cpu"] < 0.25 * watched["first_gap_wall"] + 0.2
    summary = read_record(run.summary, records.SummaryFile)
    assert summary.state == "completed"
