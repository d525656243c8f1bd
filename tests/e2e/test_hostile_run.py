"""One whole run against the test-only hostile endpoint: a session answered by an HTML page, an
answer whose stream never ends properly, a judgment that is not a completion, and every other reply
echoing the API key. Each failure is its stage's gap, nothing false is scored, the key is nowhere."""

import base64
import json
from urllib.parse import quote

import pytest

from e2e.runs import API_KEY, errors, run_cli, summary
from hostile_endpoint import Hostility, start_hostile
from mobilemem.dataset import load_dataset
from mobilemem.records import AnswerResponseFile, ErrorFile, JudgmentFile, ResultLine, SessionFile
from mobilemem.rundir import read_lines, read_record

pytestmark = pytest.mark.slow


def test_a_hostile_endpoint_never_gets_a_false_score_or_the_key_into_a_file(sample_root, monkeypatch, tmp_path):
    dataset = load_dataset(sample_root)
    answer_q, judge_q = dataset.users[0].questions[0], dataset.users[0].questions[1]
    rules = [Hostility(role="ingest", kind="html_200", contains="session_id=2_2 date="),
             Hostility(role="answer", kind="no_terminal", contains=answer_q.question),
             Hostility(role="judge", kind="not_a_completion", contains=judge_q.question),
             Hostility(role="*", kind="partial_usage", contains="session_id=1_1 date="),
             Hostility(role="*", kind="echo_key")]
    with start_hostile(rules) as hostile:
        code, run = run_cli(monkeypatch, None, sample_root, tmp_path / "out", base_url=hostile.base_url)
    assert code == 0
    s = summary(run)
    assert s.gaps == {"answer": {"broken stream": 1}, "history": {"ingest failed: malformed response": 3},
                      "judge": {"malformed response": 1}}
    assert (s.expected, s.scored) == (9, 4)
    assert {(e.stage, e.user_id) for e in errors(run)} == {("ingest", 2), ("answer", 0), ("judge", 0)}
    assert not read_record(run.user(2).session("2_2"), SessionFile).success
    assert read_record(run.user(0).question(answer_q.question_id).error, ErrorFile).stage == "answer"
    assert not read_record(run.user(0).question(judge_q.question_id).judgment, JudgmentFile).success
    for result in read_lines(run.results, ResultLine):  # nothing scored comes from a failed request
        if result.status == "scored":
            answer = read_record(run.user(result.user_id).question(result.question_id).answer_response,
                                 AnswerResponseFile)
            assert all(r.success for r in answer.requests) and answer.response.success
    partial = read_record(run.user(1).session("1_1"), SessionFile)
    assert partial.success and partial.usage.completion_tokens.value is None and partial.usage.prompt_tokens.value
    forms = [API_KEY, base64.b64encode(API_KEY.encode()).decode(), quote(API_KEY, safe="")]
    leaked = [(str(p.relative_to(run.root)), f) for p in run.root.rglob("*") if p.is_file()
              for f in forms if f.encode() in p.read_bytes()]
    assert leaked == []
    notes = "".join(p.read_text() for p in run.root.glob("users/0/workspace/daily/*/*.md"))
    assert "My key is [redacted]" in notes  # the model did echo it; the transport removed it
    assert json.loads(run.run.read_text())["state"] == "completed"
