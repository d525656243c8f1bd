"""One evaluation across two workers (DESIGN §12), on the machinery of deployments/distributed.sh:
PostgreSQL, a Prefect server on it, the process pool `mobilemem` and two workers with `--limit 2`.
A generated set of 6 users x 2 sessions x 3 questions against a simulator at 0.3 s, so that
`--query-concurrency 2` binds.

Every assertion reads what a user reads: host.json, the records' times, `compare`, the simulator's
request log."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from mobilemem.records import (AnswerResponseFile, CompareFile, ErrorFile, HostFile, JudgmentFile, MetricsFile,
                               RunFile, SummaryFile)
from mobilemem.rundir import RunDir, read_record
from e2e.distributed.cluster import base_environment
from e2e.runs import API_KEY

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]
USERS, QUESTIONS = 6, 3


def _run(env: dict[str, str], *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "flows/mobilemem.py", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    from generate_sample import generate

    root = tmp_path_factory.mktemp("dataset") / "set"
    generate(root, users=USERS, sessions=2, questions=QUESTIONS, extract=True)
    return root


@pytest.fixture(scope="module", autouse=True)
def slow_endpoint(simulator):
    """Every request takes 0.3 s, so that the question limit binds."""
    simulator.reset()
    simulator.latency_s = 0.3
    yield simulator
    simulator.reset()


def _parent(dataset: Path, output: Path, *extra: str) -> list[str]:
    """The command line of an evaluation on the cluster's workers."""
    return [sys.executable, "flows/mobilemem.py", "--dataset", str(dataset), "--output", str(output),
            "--workers", "mobilemem", *extra]


@pytest.fixture(scope="module")
def distributed_run(cluster, dataset, tmp_path_factory) -> RunDir:
    output = tmp_path_factory.mktemp("a")
    done = subprocess.run(_parent(dataset, output, "--query-concurrency", "2"), cwd=ROOT, env=cluster.env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return RunDir.for_output(output, "qwen3.8-max")


@pytest.fixture(scope="module")
def single_process_env(simulator, tmp_path_factory) -> dict[str, str]:
    """The same endpoint, and Prefect's embedded server of the command's own."""
    return {**base_environment({"LLM_BASE_URL": simulator.base_url, "LLM_API_KEY": API_KEY}),
            "PREFECT_HOME": str(tmp_path_factory.mktemp("prefect-home"))}


@pytest.fixture(scope="module")
def single_process_run(single_process_env, dataset, tmp_path_factory) -> RunDir:
    output = tmp_path_factory.mktemp("b")
    done = _run(single_process_env, "--dataset", str(dataset), "--output", str(output), "--query-concurrency", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    return RunDir.for_output(output, "qwen3.8-max")


def _questions(run: RunDir) -> list[tuple[int, str]]:
    plan = read_record(run.run, RunFile)
    return [(q.user_id, q.question_id) for q in plan.questions]


def test_both_workers_ran_users(distributed_run):
    hosts = [read_record(distributed_run.user(u).host, HostFile) for u in range(USERS)]
    assert {h.worker for h in hosts} == {"worker-1", "worker-2"}
    assert len({h.pid for h in hosts}) == USERS  # each user its own flow-run process


def _peak(intervals: list[tuple[datetime, datetime]]) -> int:
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals],
                    key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
    peak = current = 0
    for _, step in events:
        current += step
        peak = max(peak, current)
    return peak


def test_questions_in_flight_across_all_users_peak_at_exactly_the_limit(distributed_run):
    intervals = []
    for user_id, question_id in _questions(distributed_run):
        folder = distributed_run.user(user_id).question(question_id)
        answered = read_record(folder.answer_response, AnswerResponseFile)
        judged = read_record(folder.judgment, JudgmentFile)
        intervals.append((answered.started_at, judged.finished_at))
    assert len(intervals) == USERS * QUESTIONS
    assert _peak(intervals) == 2


def test_the_records_equal_a_single_process_runs(distributed_run, single_process_run, single_process_env, tmp_path):
    done = _run(single_process_env, "compare", str(distributed_run.root), str(single_process_run.root),
                "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    [compared] = [read_record(p, CompareFile) for p in tmp_path.glob("compare-*.json")]
    assert compared.run_a.scored == compared.run_b.scored == compared.overall.compared == USERS * QUESTIONS
    assert compared.correct_only_in_a == compared.correct_only_in_b == []
    for user_id, question_id in _questions(distributed_run):
        a = distributed_run.user(user_id).question(question_id)
        b = single_process_run.user(user_id).question(question_id)
        assert read_record(a.metrics, MetricsFile) == read_record(b.metrics, MetricsFile)
        assert read_record(a.judgment, JudgmentFile).label == read_record(b.judgment, JudgmentFile).label
    a, b = (read_record(r.summary, SummaryFile) for r in (distributed_run, single_process_run))
    assert (a.scored, a.expected, a.gaps) == (b.scored, b.expected, b.gaps) == (USERS * QUESTIONS, USERS * QUESTIONS, {})
    assert (a.overall, a.by_language, a.by_difficulty) == (b.overall, b.by_language, b.by_difficulty)


def _mid_ingest(run: RunDir) -> tuple[int, HostFile] | None:
    """A user whose run has started and recorded no session yet (it holds no question slot)."""
    for user_id in range(USERS):
        user = run.user(user_id)
        if user.host.is_file() and not any(user.sessions.glob("*.json")):
            return user_id, read_record(user.host, HostFile)
    return None


def _mid_answer(run: RunDir, besides: int | None = None) -> tuple[int, HostFile] | None:
    """A user (other than `besides`) whose answer is under way (job.json written, no judgment yet)
    and its host.json."""
    for user_id in (u for u in range(USERS) if u != besides):
        user = run.user(user_id)
        questions = user.root / "questions"
        if not user.host.is_file() or not questions.is_dir():
            continue
        for folder in questions.iterdir():
            if (folder / "job.json").is_file() and not (folder / "judgment.json").exists():
                return user_id, read_record(user.host, HostFile)
    return None


def test_two_evaluations_with_an_endpoint_limit_never_exceed_it_at_the_endpoint(cluster, dataset, simulator,
                                                                                 tmp_path):
    simulator.reset()
    simulator.latency_s = 0.3
    started = [subprocess.Popen(_parent(dataset, tmp_path / name, "--endpoint-limit", "2", "--users", "0,1"),
                                cwd=ROOT, env=cluster.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
               for name in ("one", "two")]
    for process in started:
        _, stderr = process.communicate(timeout=900)
        assert process.returncode == 0, stderr[-3000:]
    assert simulator.max_in_flight() == 2
    assert len(simulator.requests) > 2 * 2 * QUESTIONS  # both evaluations went through it


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _until(check, what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def _unscored_reasons(run: RunDir, user_id: int) -> set[str]:
    return {read_record(run.user(user_id).question(q).error, ErrorFile).reason
            for u, q in _questions(run) if u == user_id and not run.user(u).question(q).metrics.is_file()}


def test_a_killed_and_a_frozen_user_run_are_their_users_gaps_and_the_others_complete(cluster, dataset, tmp_path):
    """SIGSTOP of one user's flow-run process before its first session is recorded (alive, but silent
    past user_heartbeat_timeout_s: the parent cancels it), kill -9 of another's mid-answer (its run
    ends Crashed). One evaluation for both: the killed answer's question slot stays taken until its
    lease expires (about a minute), which a second run would wait for again."""
    config = tmp_path / "heartbeat.yaml"
    config.write_text("user_heartbeat_timeout_s: 8\n")
    output = tmp_path / "killed"
    parent = subprocess.Popen(_parent(dataset, output, "--query-concurrency", "2", "--config", str(config)),
                              cwd=ROOT, env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run = RunDir.for_output(output, "qwen3.8-max")
    _until(lambda: _mid_ingest(run) is not None or parent.poll() is not None, "no ingest was seen under way", 600)
    frozen, stopped = _mid_ingest(run)
    os.kill(stopped.pid, signal.SIGSTOP)  # alive, but its heartbeat stops
    try:
        _until(lambda: _mid_answer(run, besides=frozen) is not None or parent.poll() is not None,
               "no answer was seen under way", 600)
        killed, host = _mid_answer(run, besides=frozen)
        os.kill(host.pid, signal.SIGKILL)
        _, stderr = parent.communicate(timeout=900)
    finally:
        with contextlib.suppress(ProcessLookupError):  # the worker kills a cancelled run's process
            os.kill(stopped.pid, signal.SIGKILL)
    assert parent.returncode == 0, stderr[-3000:]
    assert _unscored_reasons(run, killed) == {"orchestration failed: Crashed"}
    assert _unscored_reasons(run, frozen) == {"orchestration failed: silent for 8 s"}
    assert all(run.user(u).question(q).metrics.is_file() for u, q in _questions(run) if u not in (killed, frozen))


def test_interrupting_the_parent_cancels_its_user_runs(cluster, dataset, tmp_path):
    output = tmp_path / "interrupted"
    parent = subprocess.Popen(_parent(dataset, output), cwd=ROOT, env=cluster.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    run = RunDir.for_output(output, "qwen3.8-max")
    _until(lambda: any(run.user(u).host.is_file() for u in range(USERS)) or parent.poll() is not None,
           "no user run started", 600)
    started = [read_record(run.user(u).host, HostFile) for u in range(USERS) if run.user(u).host.is_file()]
    parent.send_signal(signal.SIGINT)
    _, stderr = parent.communicate(timeout=300)
    assert parent.returncode == 130, stderr[-3000:]
    for host in started:
        _until(lambda: cluster.api("GET", f"flow_runs/{host.flow_run_id}").json()["state"]["type"]
               in ("CANCELLED", "COMPLETED", "CRASHED"), f"user {host.user_id}'s run was not stopped")
        _until(lambda: not _alive(host.pid), f"user {host.user_id}'s process still runs")
    assert any(cluster.api("GET", f"flow_runs/{h.flow_run_id}").json()["state"]["type"] == "CANCELLED"
               for h in started)
