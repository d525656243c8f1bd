"""Failures are data: one run of the sample with a failing session, answer and judgment, plus an
injected cleanup error; and a larger fault-free run that shows the concurrency limits hold."""

import sys
from datetime import datetime

import pytest

from conftest import ROOT
from mobilemem.dataset import load_dataset
from mobilemem.records import AnswerResponseFile, ErrorFile, JudgmentFile, RunFile, SessionFile
from mobilemem.rundir import read_record
from mobilemem.simulator import FaultRule
from e2e.runs import API_KEY, errors, run_cli, summary

sys.path.insert(0, str(ROOT / "examples"))
from generate_sample import generate  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def faulty_run(sample_root, simulator, tmp_path_factory):
    dataset = load_dataset(sample_root)
    answer_q = dataset.users[0].questions[1]
    judge_q = dataset.users[2].questions[0]
    simulator.reset()
    simulator.faults = [FaultRule(role="ingest", contains="Session 1_2,", kind="http_500"),
                        FaultRule(role="answer", contains=answer_q.question, kind="http_500"),
                        FaultRule(role="judge", contains=judge_q.question, kind="empty_reply")]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MOBILEMEM_INJECT_CLEANUP_ERROR", "1")
        code, run = run_cli(mp, simulator, sample_root, tmp_path_factory.mktemp("out"))
    requests = simulator.requests
    simulator.reset()
    return code, run, requests, answer_q, judge_q


def test_cleanup_error_gives_exit_2_and_keeps_the_results(faulty_run):
    code, run, _, _, _ = faulty_run
    assert code == 2
    assert summary(run).cleanup_error_count == 1 and "MOBILEMEM_INJECT_CLEANUP_ERROR" in run.cleanup_errors.read_text()
    assert summary(run).scored == 4  # user 0: 2 of 3, user 2: 2 of 3, user 1: none


def test_a_failed_session_ends_only_that_users_history(faulty_run):
    _, run, requests, _, _ = faulty_run
    user = run.user(1)
    assert sorted(p.stem for p in user.sessions.glob("*.json")) == ["1_1", "1_2"]
    assert not user.index_response.exists() and not user.memory_usage.exists()
    [ingest_error] = [e for e in errors(run) if e.stage == "ingest"]
    assert (ingest_error.user_id, ingest_error.session_id) == (1, "1_2") and ingest_error.image_paths
    for qid in ("1_q_1", "1_q_2", "1_q_3"):
        q = user.question(qid)
        gap = read_record(q.error, ErrorFile)
        assert (gap.stage, gap.reason, gap.error_id) == ("history", "ingest failed: HTTP 500", ingest_error.id)
        assert q.job.exists() and not q.answer_response.exists()
    assert not [r for r in requests if r.role == "answer" and "我去" in str(r.body)]  # user 1 never answered
    for other in (0, 2):
        assert run.user(other).memory_usage.exists()


def test_a_failed_answer_is_an_answer_gap_after_exactly_one_attempt(faulty_run):
    _, run, requests, answer_q, _ = faulty_run
    attempts = [r for r in requests if r.role == "answer" and answer_q.question in str(r.body)]
    assert len(attempts) == 1 and attempts[0].status == 500
    q = run.user(0).question(answer_q.question_id)
    response = read_record(q.answer_response, AnswerResponseFile)
    assert response.response is not None and not response.response.success
    gap = read_record(q.error, ErrorFile)
    assert (gap.stage, gap.reason) == ("answer", "HTTP 500") and gap.error_id in {e.id for e in errors(run)}
    assert not q.judgment.exists() and not q.metrics.exists()


def test_an_unparseable_judgment_is_a_judge_gap_not_a_zero(faulty_run):
    _, run, _, _, judge_q = faulty_run
    q = run.user(2).question(judge_q.question_id)
    judgment = read_record(q.judgment, JudgmentFile)
    assert not judgment.success and judgment.label is None and judgment.raw_reply == ""
    assert read_record(q.error, ErrorFile).stage == "judge" and not q.metrics.exists()


def test_summary_counts_and_denominators(faulty_run):
    _, run, _, _, _ = faulty_run
    s = summary(run)
    assert (s.expected, s.answered, s.judged, s.scored) == (9, 5, 4, 4)
    assert s.gaps == {"answer": {"HTTP 500": 1}, "history": {"ingest failed: HTTP 500": 3},
                      "judge": {"unparseable reply": 1}}
    assert s.overall.scored == 4 and s.overall.accuracy == 1.0
    assert s.usage.mean_tokens_per_question.denominator == 9
    assert s.usage.mean_tokens_per_user.completed == 2 and s.usage.mean_tokens_per_user.denominator == 3
    assert read_record(run.run, RunFile).state == "completed"


def test_no_planted_key_anywhere_in_the_run_directory(faulty_run):
    _, run, _, _, _ = faulty_run
    assert [p for p in run.root.rglob("*") if p.is_file() and API_KEY.encode() in p.read_bytes()] == []


def _max_overlap(intervals: list[tuple[datetime, datetime]]) -> int:
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    current = peak = 0
    for _, delta in events:
        current += delta
        peak = max(peak, current)
    return peak


def test_concurrency_limits_hold_across_users(simulator, tmp_path, monkeypatch):
    dataset = tmp_path / "ds"
    generate(dataset, users=6, sessions=3, turns=6, images=2, questions=6, seed=3, image_size=(160, 120),
             extract=True)
    simulator.reset()
    simulator.latency_s = 0.25
    try:
        code, run = run_cli(monkeypatch, simulator, dataset, tmp_path / "out")
    finally:
        simulator.reset()
    assert code == 0
    manifest = read_record(run.run, RunFile)
    assert len(manifest.users) == 6 and len(manifest.questions) == 36
    answers = [read_record(run.user(q.user_id).question(q.question_id).answer_response, AnswerResponseFile)
               for q in manifest.questions]
    answer_peak = _max_overlap([(a.started_at, a.finished_at) for a in answers])
    assert 4 < answer_peak <= 16
    users = []
    for user_id in manifest.users:
        first = min(read_record(p, SessionFile).started_at for p in run.user(user_id).sessions.glob("*.json"))
        last = max(read_record(run.user(user_id).question(q.question_id).judgment, JudgmentFile).finished_at
                   for q in manifest.questions if q.user_id == user_id)
        users.append((first, last))
    assert 1 < _max_overlap(users) <= 4
    assert summary(run).scored == 36
