"""`--reuse`: run A on the sample with user 1's session 1_2 failing (its history ends) and one answer
of user 0 failing; run B with `--reuse A` and no faults. B asks only what A did not finish, counts
only what it sent, reports the rest as reused with where it came from, and leaves A untouched."""

import hashlib
import json

import pytest

from e2e.runs import run_cli, summary
from mobilemem.dataset import load_dataset
from mobilemem.records import JobFile, ReuseFile, RunFile, SessionFile
from mobilemem.rundir import read_record
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
    assert (s.usage.mean_tokens_per_user.denominator, s.usage.mean_tokens_per_user.reused) == (1, 2)
    assert (s.usage.mean_tokens_per_question.denominator, s.usage.mean_tokens_per_question.reused) == (4, 5)


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
    for folder in ("daily", "session/images"):
        theirs = sorted(p.relative_to(run_a.user(0).workspace) for p in (run_a.user(0).workspace / folder).rglob("*"))
        mine = sorted(p.relative_to(run_b.user(0).workspace) for p in (run_b.user(0).workspace / folder).rglob("*"))
        assert mine == theirs


def test_a_is_byte_identical_after_b(runs):
    _, run_a, _, _, _, before, _ = runs
    assert _tree_digest(run_a.root) == before
