"""Failures are data: one run of the sample where every stage fails once (session, index, answer,
judgment), compared with the fault-free baseline, plus an injected cleanup error and planted
secrets; and a larger fault-free run that shows the concurrency limits hold."""

import json
import sys
from datetime import datetime

import pytest
from prefect.client.orchestration import get_client

from conftest import ROOT
from e2e.runs import API_KEY, errors, run_cli, summary
from mobilemem.dataset import load_dataset
from mobilemem.records import (
    AnswerResponseFile,
    ErrorFile,
    IndexResponseFile,
    JudgmentFile,
    ResultLine,
    RunFile,
    SessionFile,
)
from mobilemem.rundir import read_lines, read_record
from mobilemem.simulator import FaultRule

sys.path.insert(0, str(ROOT / "examples"))
from generate_sample import generate  # noqa: E402

pytestmark = pytest.mark.slow



def test_cleanup_error_gives_exit_2_and_keeps_the_results(faulty_run):
    code, run, _, _, _ = faulty_run
    assert code == 2
    assert summary(run).cleanup_error_count == 1 and "MOBILEMEM_INJECT_CLEANUP_ERROR" in run.cleanup_errors.read_text()
    assert summary(run).scored == 1  # user 0: 1 of 3; users 1 (history) and 2 (index): none


def test_a_failed_session_ends_only_that_users_history(faulty_run):
    _, run, requests, _, _ = faulty_run
    user = run.user(1)
    assert sorted(p.stem for p in user.sessions.glob("*.json")) == ["1_1", "1_2"]
    assert not user.index_response.exists() and not user.memory_usage.exists()
    [ingest_error] = [e for e in errors(run) if e.stage == "ingest"]
    assert (ingest_error.user_id, ingest_error.session_id) == (1, "1_2") and ingest_error.image_paths
    attempts = [r for r in requests if r.role == "ingest" and "session_id=1_2 date=" in json.dumps(r.body)]
    assert [r.status for r in attempts] == [500]  # one HTTP attempt through ReMe's job, its wrapper and model
    failed = read_record(user.session("1_2"), SessionFile)
    assert not failed.success and failed.failure.label == "HTTP 500" and failed.failure.error_id == ingest_error.id
    assert failed.answer and "500" in failed.answer  # ReMe's error message, kept as the reason
    for qid in ("1_q_1", "1_q_2", "1_q_3"):
        q = user.question(qid)
        gap = read_record(q.error, ErrorFile)
        assert (gap.stage, gap.reason, gap.failure.error_id) == ("history", "ingest failed: HTTP 500", ingest_error.id)
        assert q.job.exists() and not q.answer_response.exists()
    assert not [r for r in requests if r.role == "answer" and "我去" in str(r.body)]  # user 1 never answered
    assert run.user(0).memory_usage.exists()


def test_an_index_failure_blocks_only_that_users_questions(faulty_run):
    _, run, _, _, _ = faulty_run
    user = run.user(2)
    assert len(list(user.sessions.glob("*.json"))) == 4 and not user.memory_usage.exists()
    index = read_record(user.index_response, IndexResponseFile)
    [index_error] = [e for e in errors(run) if e.stage == "index"]
    assert not index.success and index.failure.error_id == index_error.id and "disk full" in index_error.failure.message
    for qid in ("2_q_1", "2_q_2", "2_q_3"):
        gap = read_record(user.question(qid).error, ErrorFile)
        assert (gap.stage, gap.reason, gap.failure.error_id) == ("index", "OSError", index_error.id)


def test_a_failed_answer_is_an_answer_gap_after_exactly_one_attempt(faulty_run):
    _, run, requests, answer_q, _ = faulty_run
    attempts = [r for r in requests if r.role == "answer" and answer_q.question in str(r.body)]
    assert len(attempts) == 1 and attempts[0].status == 401
    q = run.user(0).question(answer_q.question_id)
    response = read_record(q.answer_response, AnswerResponseFile)
    assert response.response is not None and not response.response.success
    gap = read_record(q.error, ErrorFile)
    assert (gap.stage, gap.reason) == ("answer", "HTTP 401") and gap.failure.error_id in {e.id for e in errors(run)}
    assert "Incorrect API key provided: " in gap.failure.message and "[redacted]" in gap.failure.message
    assert not q.judgment.exists() and not q.metrics.exists()


def test_an_unparseable_judgment_is_a_judge_gap_not_a_zero(faulty_run):
    _, run, _, _, judge_q = faulty_run
    q = run.user(0).question(judge_q.question_id)
    judgment = read_record(q.judgment, JudgmentFile)
    assert not judgment.success and judgment.label is None and judgment.raw_reply == ""
    assert read_record(q.error, ErrorFile).stage == "judge" and not q.metrics.exists()


def test_summary_counts_and_denominators(faulty_run):
    _, run, _, _, _ = faulty_run
    s = summary(run)
    assert (s.expected, s.answered, s.judged, s.scored) == (9, 2, 1, 1)
    assert s.gaps == {"answer": {"HTTP 401": 1}, "history": {"ingest failed: HTTP 500": 3}, "index": {"OSError": 3},
                      "judge": {"unparseable reply": 1}}
    assert s.overall.scored == 1 and s.overall.accuracy == 1.0
    assert s.usage.mean_tokens_per_question.denominator == 9
    assert s.usage.mean_tokens_per_user.completed == 1 and s.usage.mean_tokens_per_user.denominator == 3
    assert read_record(run.run, RunFile).state == "completed"


async def test_no_planted_secret_anywhere_in_the_run_directory_log_or_artifacts(faulty_run):
    _, run, requests, _, _ = faulty_run
    assert any(r.status == 401 for r in requests)  # the key really was quoted back in an error
    secrets = (API_KEY.encode(),)
    assert [p for p in run.root.rglob("*") if p.is_file() and any(s in p.read_bytes() for s in secrets)] == []
    async with get_client() as client:
        artifacts = await client.read_artifacts()
    dumped = json.dumps([a.model_dump(mode="json") for a in artifacts]).encode()
    assert artifacts and not any(s in dumped for s in secrets)


def test_other_questions_are_identical_to_the_fault_free_baseline(faulty_run, baseline_run):
    _, run, _, answer_q, judge_q = faulty_run
    _, baseline, _, _ = baseline_run
    affected = {answer_q.question_id, judge_q.question_id}
    ours = {r.question_id: r for r in read_lines(run.results, ResultLine)}
    theirs = {r.question_id: r for r in read_lines(baseline.results, ResultLine)}
    same = [qid for qid, r in ours.items() if r.status == "scored" and qid not in affected]
    assert same == ["0_q_1"]
    for qid in same:
        assert ours[qid].model_dump(exclude={"answer_latency_s"}) == theirs[qid].model_dump(exclude={"answer_latency_s"})
    for folder in ("daily", "session/dialog", "session/images"):
        mine = sorted(p.relative_to(run.root) for p in (run.user(0).workspace / folder).rglob("*") if p.is_file())
        base = sorted(p.relative_to(baseline.root) for p in (baseline.user(0).workspace / folder).rglob("*")
                      if p.is_file())
        assert mine == base


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
    judgments = [read_record(run.user(q.user_id).question(q.question_id).judgment, JudgmentFile)
                 for q in manifest.questions]
    # one slot per question from the start of its answer to the end of its judgment: 16, not 16 + 16
    question_peak = _max_overlap([(a.started_at, j.finished_at) for a, j in zip(answers, judgments)])
    assert 4 < question_peak <= 16
    users = []
    for user_id in manifest.users:
        first = min(read_record(p, SessionFile).started_at for p in run.user(user_id).sessions.glob("*.json"))
        last = max(read_record(run.user(user_id).question(q.question_id).judgment, JudgmentFile).finished_at
                   for q in manifest.questions if q.user_id == user_id)
        users.append((first, last))
    assert 1 < _max_overlap(users) <= 4
    assert summary(run).scored == 36


def test_a_failed_subflow_turns_its_questions_into_counted_gaps(sample_root, simulator, tmp_path, monkeypatch):
    from tasks import ingest

    async def broken(*args, **kwargs):
        raise RuntimeError("the orchestration API went away (injected)")

    simulator.reset()
    monkeypatch.setattr(ingest.ingest_session, "fn", broken)
    monkeypatch.setattr(ingest.ingest_session, "aio", broken, raising=False)
    code, run = run_cli(monkeypatch, simulator, sample_root, tmp_path / "out", "--users", "2")
    simulator.reset()
    assert code == 4  # nothing of this user was scored
    s = summary(run)
    assert s.expected == 3 and s.scored == 0
    assert sum(sum(reasons.values()) for reasons in s.gaps.values()) == 3


def test_a_subflow_the_busy_prefect_api_refused_to_start_is_started_again(sample_root, simulator, tmp_path,
                                                                         monkeypatch):
    """The bench's lost user: POST /task_runs/ answered 503 past the client's retries while the
    subflow was being created. Nothing of the user had run, so it is started again; no work repeats."""
    import httpx
    from prefect.client.orchestration import PrefectClient
    from prefect.exceptions import PrefectHTTPStatusError

    from lifecycle import orchestration

    real_create = PrefectClient.create_task_run
    refused = []

    async def busy_server(self, task, *args, **kwargs):
        if task.name == "mobilemem-user" and len(refused) < 2:
            request = httpx.Request("POST", "http://127.0.0.1/api/task_runs/")
            response = httpx.Response(503, request=request, json={"exception_message": "Service Unavailable"})
            refused.append(task.name)
            raise PrefectHTTPStatusError.from_httpx_error(
                httpx.HTTPStatusError("503 Service Unavailable", request=request, response=response))
        return await real_create(self, task, *args, **kwargs)

    simulator.reset()
    monkeypatch.setattr(orchestration, "PAUSE_S", 0.05)
    monkeypatch.setattr(PrefectClient, "create_task_run", busy_server)
    code, run = run_cli(monkeypatch, simulator, sample_root, tmp_path / "out", "--users", "0")
    requests = simulator.requests
    simulator.reset()
    assert code == 0 and len(refused) == 2
    s = summary(run)
    assert s.scored == s.expected == 3 and not s.gaps and errors(run) == []
    ingests = [r for r in requests if r.role == "ingest" and "session_id=0_1 date=" in json.dumps(r.body)]
    assert len(ingests) == len([r for r in ingests if r.status == 200]) >= 1  # session 0_1 ingested once
    assert read_record(run.user(0).session("0_1"), SessionFile).success
    assert run.log.read_text().count("the Prefect API did not start the subflow of user 0") == 2


def test_a_base_url_with_credentials_is_refused_in_one_line(sample_root, tmp_path, monkeypatch, capsys):
    from cli import main

    monkeypatch.setenv("LLM_API_KEY", API_KEY)
    monkeypatch.setenv("LLM_BASE_URL", "http://bob:urlpass-PLANTED-4242@127.0.0.1:9/v1")
    assert main(["--dataset", str(sample_root), "--output", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "user:password@" in err and "urlpass-PLANTED" not in err
    assert not (tmp_path / "mobilemem").exists()


def test_a_lost_prefect_api_after_the_work_is_a_cleanup_error_not_a_lost_run(sample_root, simulator, tmp_path,
                                                                           monkeypatch):
    from tasks import finalize

    async def api_gone(*args, **kwargs):
        raise ConnectionError("the Prefect API went away (injected)")

    simulator.reset()
    monkeypatch.setattr(finalize, "_artifacts", api_gone)
    code, run = run_cli(monkeypatch, simulator, sample_root, tmp_path / "out", "--users", "0")
    simulator.reset()
    assert code == 2
    s = summary(run)
    assert s.scored == 3 and s.cleanup_error_count == 1 and s.state == "completed"
    assert "Prefect API went away" in run.cleanup_errors.read_text()


def test_a_judge_reply_giving_both_verdicts_is_a_judge_gap_of_its_own_kind(sample_root, simulator, tmp_path,
                                                                           monkeypatch):
    """The kind flows from the judge to judgment.json, error.json, errors.jsonl and the summary's gap
    counts; a reply in words that negates CORRECT is read as WRONG, not as CORRECT."""
    questions = load_dataset(sample_root).users[0].questions
    simulator.reset()
    simulator.faults = [
        FaultRule(role="judge", contains=questions[0].question, kind="text",
                  text="The correct answer is nine, so the generated answer is wrong."),
        FaultRule(role="judge", contains=questions[1].question, kind="text",
                  text="The generated answer is not correct."),
    ]
    try:
        code, run = run_cli(monkeypatch, simulator, sample_root, tmp_path / "out", "--users", "0",
                            candidate="no-memory")
    finally:
        simulator.reset()
    assert code == 0
    ambiguous, negated = (run.user(0).question(q.question_id) for q in questions[:2])
    judgment = read_record(ambiguous.judgment, JudgmentFile)
    assert (judgment.success, judgment.label, judgment.decided_by) == (False, None, "words")
    gap = read_record(ambiguous.error, ErrorFile)
    assert (gap.stage, gap.reason) == ("judge", "ambiguous judge reply") and not ambiguous.metrics.exists()
    [line] = [e for e in errors(run) if e.id == gap.failure.error_id]
    assert line.failure.label == "ambiguous judge reply"
    assert read_record(negated.judgment, JudgmentFile).label == "WRONG"
    s = summary(run)
    assert s.gaps == {"judge": {"ambiguous judge reply": 1}} and s.scored == s.expected - 1
