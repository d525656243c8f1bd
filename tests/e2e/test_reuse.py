"""`--reuse`: run A on the sample with user 1's session 1_2 failing (its history ends) and one answer
of user 0 failing; run B with `--reuse A` and no faults. B asks only what A did not finish, counts
only what it sent, reports the rest as reused with where it came from, and leaves A untouched."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from e2e.runs import run_cli, summary
from cli import main
from mobilemem.dataset import load_dataset
from mobilemem.records import AnswerResponseFile, JobFile, RejudgeFile, ReuseFile, RunFile, SessionFile
from mobilemem.rundir import RunDir, read_record
from mobilemem.simulator import FaultRule
from mobilemem.usage import summarize

pytestmark = pytest.mark.slow


def _tree_digest(root) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def runs(sample_root, simulator, tmp_path_factory):
    dataset = load_dataset(sample_root)
    failed_answer = dataset.users[0].questions[1]
    out = tmp_path_factory.mktemp("reuse")
    simulator.reset()
    simulator.faults = [FaultRule(role="ingest", contains="session_id=1_2 date=", kind="http_500"),
                        FaultRule(role="answer", contains=failed_answer.question, kind="http_500")]
    with pytest.MonkeyPatch.context() as mp:
        code_a, run_a = run_cli(mp, simulator, sample_root, out / "a")
    simulator.reset()
    before = _tree_digest(run_a.root)
    with pytest.MonkeyPatch.context() as mp:
        code_b, run_b = run_cli(mp, simulator, sample_root, out / "b", "--reuse", str(run_a.root))
    requests_b = simulator.requests
    simulator.reset()
    return code_a, run_a, code_b, run_b, requests_b, before, failed_answer


def test_b_asks_only_what_a_did_not_finish(runs):
    code_a, run_a, code_b, run_b, requests, _, failed_answer = runs
    assert code_a == 0 and summary(run_a).scored == 5  # user 1's 3 questions and one answer of user 0 are gaps
    assert code_b == 0
    ingests = [r for r in requests if r.role == "ingest"]
    assert ingests and all("session_id=1_" in json.dumps(r.body) for r in ingests)  # only user 1's memory
    plan = read_record(run_b.run, RunFile)
    texts = {q.question_id: read_record(run_b.user(q.user_id).question(q.question_id).job, JobFile).question
             for q in plan.questions}
    asked = {"1_q_1", "1_q_2", "1_q_3", failed_answer.question_id}
    for role in ("answer", "judge"):
        bodies = [json.dumps(r.body, ensure_ascii=False) for r in requests if r.role == role]
        assert {qid for qid, text in texts.items() if any(text in body for body in bodies)} == asked


def test_b_scores_everything_and_counts_only_its_own_requests(runs):
    _, run_a, _, run_b, requests, _, _ = runs
    s = summary(run_b)
    assert s.scored == s.expected == 9 and not s.gaps
    assert s.usage.memory.requests == len([r for r in requests if r.role == "ingest"])
    assert s.usage.answer.requests == len([r for r in requests if r.role == "answer"])
    # usage policy v3: every scheduled user and expected question is in the denominator, a copied one at 0
    per_user, per_question = s.usage.mean_tokens_per_user, s.usage.mean_tokens_per_question
    spent = s.usage.memory.tokens.value + s.usage.answer.tokens.value
    assert (per_user.denominator, per_user.known, per_user.reused) == (3, 3, 2)
    assert per_user.tokens == spent and per_user.value == spent / 3
    assert (per_question.denominator, per_question.known, per_question.reused, per_question.attempted) == (9, 9, 5, 4)
    assert per_question.tokens == s.usage.answer.tokens.value and per_question.value == s.usage.answer.tokens.value / 9


def test_the_reused_items_are_as_in_a_and_say_where_they_came_from(runs):
    _, run_a, _, run_b, _, _, failed_answer = runs
    reused = summary(run_b).usage.reused
    assert (reused.users, reused.sessions, reused.answers, reused.judgments) == (2, 8, 5, 5)
    a_sessions = [read_record(p, SessionFile).requests for u in (0, 2) for p in run_a.user(u).sessions.glob("*.json")]
    assert reused.memory == summarize(r for s in a_sessions for r in s)
    a_id = read_record(run_a.run, RunFile).flow_run_id
    record = read_record(run_b.user(0).reuse, ReuseFile)
    assert record.memory.run_dir == str(run_a.root) and record.memory.run_id == a_id
    assert set(record.answers) == {"0_q_1", "0_q_2", "0_q_3"} - {failed_answer.question_id}
    assert not run_b.user(1).reuse.exists()  # user 1's history was incomplete in A: built from scratch
    assert record.judgments and all(  # a reused judgment brings its evidence attribution along
        run_b.user(0).question(q).attribution.read_bytes() == run_a.user(0).question(q).attribution.read_bytes()
        for q in record.judgments)
    assert summary(run_b).evidence.attributed == summary(run_b).scored
    for folder in ("daily", "session/images"):
        theirs = sorted(p.relative_to(run_a.user(0).workspace) for p in (run_a.user(0).workspace / folder).rglob("*"))
        mine = sorted(p.relative_to(run_b.user(0).workspace) for p in (run_b.user(0).workspace / folder).rglob("*"))
        assert mine == theirs


def test_a_is_byte_identical_after_b(runs):
    _, run_a, _, _, _, before, _ = runs
    assert _tree_digest(run_a.root) == before


def test_after_kill_9_mid_answering_reuse_completes_without_repeating_work(sample_root, simulator, tmp_path,
                                                                           monkeypatch):
    """`kill -9` while user 0 answers (one user at a time: the users that started before it are
    complete, the others not begun), then `--reuse`: no session is ingested twice and no completed
    answer is asked again."""
    simulator.reset()
    simulator.latency_s = 0.2
    user0 = load_dataset(sample_root).users[0]
    # two of user 0's answers hang, so the kill lands while it answers (the users after it wait for its slot)
    simulator.faults = [FaultRule(role="answer", contains=q.question, kind="timeout", delay_s=20)
                        for q in user0.questions[1:]]
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"), "LLM_API_KEY": "sk-reuse-kill-test",
           "LLM_BASE_URL": simulator.base_url}
    env.pop("PREFECT_API_URL", None)
    runner = subprocess.Popen([sys.executable, str(ROOT / "flows" / "mobilemem.py"), "--dataset", str(sample_root),
                               "--output", str(tmp_path / "a"), "--user-concurrency", "1"], env=env, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_a = RunDir.for_output(tmp_path / "a", "qwen3.8-max")
    deadline = time.monotonic() + 180
    try:
        first = run_a.user(0).question(user0.questions[0].question_id).answer_response
        while not (run_a.user(0).memory_usage.exists() and first.exists()):
            assert runner.poll() is None and time.monotonic() < deadline, "the run never reached user 0's answers"
            time.sleep(0.02)
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        simulator.wait_idle()
    a_state = read_record(run_a.run, RunFile).state
    ingested_in_a = {p.stem for p in run_a.root.glob("users/*/sessions/*.json")}
    answered_in_a = {p.parent.name for p in run_a.root.glob("users/*/questions/*/answer-response.json")
                     if read_record(p, AnswerResponseFile).response and read_record(p, AnswerResponseFile).response.success}
    simulator.reset()
    simulator.latency_s = 0.2
    code, run_b = run_cli(monkeypatch, simulator, sample_root, tmp_path / "b", "--reuse", str(run_a.root))
    requests = simulator.requests
    simulator.reset()
    assert a_state == "running"  # killed: run.json readable, never marked completed
    assert code == 0 and summary(run_b).scored == 9
    sessions = [s.session_id for u in load_dataset(sample_root).users for s in u.sessions]
    ingested_in_b = {sid for r in requests if r.role == "ingest" for sid in sessions
                     if f"session_id={sid} date=" in json.dumps(r.body)}
    # Users run one at a time, in whichever order their subflows start: those before user 0 are
    # complete in A, those after it not begun. Either way, every session is ingested exactly once.
    assert not ingested_in_b & ingested_in_a and ingested_in_a | ingested_in_b == set(sessions), (
        ingested_in_a, ingested_in_b)
    asked_in_b = {p.parent.name for p in run_b.root.glob("users/*/questions/*/answer-response.json")
                  if p.stat().st_nlink == 1}  # a reused answer is a hard link to A's file
    assert answered_in_a and not asked_in_b & answered_in_a, (answered_in_a, asked_in_b)
    assert summary(run_b).usage.reused.answers == len(answered_in_a)


def test_rejudge_judges_every_reused_answer_again_and_asks_the_candidate_nothing(runs, simulator, tmp_path,
                                                                                monkeypatch, capsys):
    _, run_a, _, _, _, before, failed_answer = runs
    simulator.reset()
    monkeypatch.setenv("LLM_API_KEY", "sk-rejudge-test")
    monkeypatch.setenv("LLM_BASE_URL", simulator.base_url)
    code = main(["rejudge", str(run_a.root), "--output", str(tmp_path / "r"), "--judge-model", "another-judge"])
    requests = simulator.requests
    simulator.reset()
    assert code == 0
    assert {r.role for r in requests} == {"judge"} and len(requests) == 5  # A's five answers, judged again
    run_r = RunDir.for_output(tmp_path / "r", "qwen3.8-max")
    s = summary(run_r)
    assert (s.scored, s.expected, s.usage.reused.answers, s.usage.reused.judgments) == (5, 9, 5, 0)
    assert s.gaps == {"answer": {"rejudge: the earlier run has no reusable answer": 1},
                      "history": {"rejudge: the earlier run has no reusable memory of this user": 3}}
    assert s.usage.memory.requests == 0 and s.usage.answer.requests == 0
    per_user, per_question = s.usage.mean_tokens_per_user, s.usage.mean_tokens_per_question
    assert (per_user.value, per_user.denominator, per_user.reused) == (0.0, 3, 2)  # cost this run nothing
    assert (per_question.value, per_question.denominator, per_question.reused) == (0.0, 9, 5)
    result = read_record(run_r.rejudge, RejudgeFile)
    assert (result.compared, result.judge_model_before, result.judge_model_after) == (5, "qwen3.8-max", "another-judge")
    assert result.flips == [] and result.accuracy_before == result.accuracy_after == 1.0
    assert "rejudge: 5 questions judged in both runs" in capsys.readouterr().out
    assert _tree_digest(run_a.root) == before
