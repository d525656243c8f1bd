"""The baselines (issue 16) on the sample through the simulator, end to end: `no-memory` scores 0 on
the visual questions (the simulator cannot see a picture it never received), `bm25-rag` scores
high from the pixels it was sent; neither makes an ingest request, each question is one request
of the documented shape, the run directories validate with the same record models, and `compare`
sets each against the default candidate's run."""

import json
import re
from pathlib import Path

import pytest

from conftest import MARKER
from e2e.runs import API_KEY, run_cli, summary
from cli import main
from mobilemem.baselines.no_memory import message_text
from mobilemem.dataset import load_dataset
from mobilemem.records import (
    AnswerResponseFile,
    AttributionFile,
    CompareFile,
    IndexResponseFile,
    JobFile,
    JudgeSettingsFile,
    JudgmentFile,
    MemoryUsageFile,
    MetricsFile,
    RunFile,
    SessionFile,
    SummaryFile,
    TranscriptChunkLine,
)
from mobilemem.rundir import RunDir, read_lines, read_record
from mobilemem.simulator.usage_rules import content_parts
from report_page import element_text

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def baselines(sample_root, simulator, tmp_path_factory):
    """{kind: (exit code, RunDir, the simulator's requests)} for both baselines."""
    runs = {}
    with pytest.MonkeyPatch.context() as mp:
        for kind in ("no-memory", "bm25-rag"):
            simulator.reset()
            code, run = run_cli(mp, simulator, sample_root, tmp_path_factory.mktemp(kind), candidate=kind)
            runs[kind] = (code, run, simulator.requests)
    simulator.reset()
    return runs


def _validate(run: RunDir) -> None:
    """Every file of the run directory reads back with its record model."""
    manifest = read_record(run.run, RunFile)
    read_record(run.summary, SummaryFile)
    for user_id in manifest.users:
        user = run.user(user_id)
        [read_record(p, SessionFile) for p in user.sessions.glob("*.json")]
        assert read_record(user.index_response, IndexResponseFile).success
        read_record(user.memory_usage, MemoryUsageFile)
    for planned in manifest.questions:
        q = run.user(planned.user_id).question(planned.question_id)
        read_record(q.job, JobFile)
        read_record(q.answer_response, AnswerResponseFile)
        read_record(q.judgment, JudgmentFile)
        read_record(q.metrics, MetricsFile)
        read_record(q.attribution, AttributionFile)


@pytest.mark.parametrize("kind", ["no-memory", "bm25-rag"])
def test_a_baseline_runs_on_the_same_contract(baselines, kind):
    code, run, requests = baselines[kind]
    assert code == 0 and run.root.name == f"qwen3.8-max-{kind}"
    manifest = read_record(run.run, RunFile)
    assert manifest.config.candidate.kind == kind and manifest.candidate.kind == kind
    assert (manifest.candidate.preset, manifest.candidate.plugin) == ("none", "none")
    assert manifest.reme_app_config is None  # no ReMe application is opened
    _validate(run)
    assert {r.role for r in requests} == {"qa", "judge"}  # no ingest, no agent, no compression
    assert len([r for r in requests if r.role == "qa"]) == len(manifest.questions)
    assert not [r.id for r in requests if r.role == "qa" and MARKER in json.dumps(r.body, ensure_ascii=False)]
    assert not [p for p in run.root.rglob("*") if p.is_file() and API_KEY.encode() in p.read_bytes()]
    done = summary(run)
    assert done.scored == done.expected == 9
    assert done.usage.answer.requests == 9 and done.usage.memory.requests == 0


@pytest.mark.parametrize("kind, name", [("no-memory", "No memory (baseline)"), ("bm25-rag", "BM25-RAG (baseline)")])
def test_a_baseline_report_is_titled_by_its_candidate_not_like_reme_s(baselines, kind, name):
    _, run, _ = baselines[kind]
    html = (run.root / "report.html").read_text(encoding="utf-8")
    title = re.search(r"<title>(.*?)</title>", html).group(1)
    assert title == f"mobilemem report: {name} on qwen3.8-max"
    assert element_text(html, "candidate-name") == name and element_text(html, "candidate-kind") == kind
    assert "ReMe" not in title + element_text(html, "run-header")
    assert element_text(html, "judge-model") == read_record(run.judge_settings, JudgeSettingsFile).model


def test_no_memory_sends_the_template_with_empty_memories_and_scores_zero(baselines, sample_root):
    _, run, requests = baselines["no-memory"]
    questions = {q.question for u in load_dataset(sample_root).users for q in u.questions}
    sent = [r.body["messages"] for r in requests if r.role == "qa"]
    assert all(len(messages) == 1 and messages[0]["role"] == "user" for messages in sent)
    texts = {"".join(p["text"] for p in content_parts(m[0]["content"]) if p["type"] == "text") for m in sent}
    assert texts == {message_text(q) for q in questions}
    assert not [m for m in sent if any(p["type"] != "text" for p in content_parts(m[0]["content"]))]
    assert summary(run).overall.accuracy == 0.0
    assert not list(run.user(0).sessions.glob("*.json"))  # nothing ingested
    assert read_record(run.user(0).memory_usage, MemoryUsageFile).sessions == 0


def test_bm25_rag_sends_the_retrieved_chunks_and_their_images_and_scores_high(baselines):
    _, run, requests = baselines["bm25-rag"]
    done = summary(run)
    assert done.overall.accuracy >= 0.8
    chunks = read_lines(run.user(0).workspace / "bm25-rag" / "chunks.jsonl", TranscriptChunkLine)
    assert {c.session_id for c in chunks} == {"0_1", "0_2", "0_3", "0_4"}
    answer = read_record(run.user(0).question("0_q_1").answer_response, AnswerResponseFile).response
    retrieval = answer.retrieval
    assert retrieval.chunks[0].session_id == "0_1" and retrieval.k == 5 and answer.iterations == 1
    [request] = [r for r in requests if r.role == "qa" and f"Question:\n{retrieval.query}\n" in json.dumps(
        r.body, ensure_ascii=False).replace("\\n", "\n")]
    parts = content_parts(request.body["messages"][0]["content"])
    assert sum(p["type"] == "image_url" for p in parts) == len(retrieval.images) > 0
    labels = [parts[i - 1]["text"] for i, p in enumerate(parts) if p["type"] == "image_url"]
    assert labels == [f"Image ID: {image.image_id}" for image in retrieval.images]
    assert "Session 0_1 (2024-03-17 17:15:00), turns 1-8:" in parts[0]["text"]
    evidence = done.evidence
    assert evidence.retrieved_and_opened.questions == done.scored


def test_compare_sets_a_baseline_against_the_default_candidate(baselines, baseline_run, tmp_path, capsys):
    _, default, _, _ = baseline_run
    _, floor, _ = baselines["no-memory"]
    assert main(["compare", str(default.root), str(floor.root), "--out", str(tmp_path)]) == 0
    [written] = tmp_path.glob("compare-*.json")
    result = read_record(written, CompareFile)
    assert result.overall.compared == 9
    assert len(result.correct_only_in_a) == 9 and result.correct_only_in_b == []
    assert "flipped: 9 correct in A only, 0 correct in B only" in capsys.readouterr().out


def test_a_bm25_rag_run_reuses_an_earlier_memory_and_answers_from_its_saved_index(
        sample_root, simulator, tmp_path):
    from mobilemem.simulator import FaultRule

    dataset = load_dataset(sample_root)
    failing = dataset.users[1].questions[0]
    simulator.reset()
    simulator.faults = [FaultRule(role="qa", contains=failing.question, kind="http_500")]
    with pytest.MonkeyPatch.context() as mp:
        code, first = run_cli(mp, simulator, sample_root, tmp_path / "a", candidate="bm25-rag")
        assert code == 0 and summary(first).scored == 8
        simulator.reset()
        code, second = run_cli(mp, simulator, sample_root, tmp_path / "b", "--reuse", str(first.root),
                               candidate="bm25-rag")
    asked = [r for r in simulator.requests if r.role == "qa"]
    simulator.reset()
    assert code == 0 and summary(second).scored == 9
    assert len(asked) == 1 and failing.question in json.dumps(asked[0].body, ensure_ascii=False)
    assert read_record(second.user(1).question(failing.question_id).answer_response,
                       AnswerResponseFile).response.retrieval.chunks
    assert Path(second.user(1).workspace / "bm25-rag" / "index").is_dir()


@pytest.mark.parametrize("kind", ["no-memory", "bm25-rag"])
def test_a_baseline_run_can_be_judged_again(baselines, simulator, tmp_path, monkeypatch, kind):
    from mobilemem.records import RejudgeFile

    _, earlier, _ = baselines[kind]
    monkeypatch.setenv("LLM_API_KEY", API_KEY)
    monkeypatch.setenv("LLM_BASE_URL", simulator.base_url)
    simulator.reset()
    code = main(["rejudge", str(earlier.root), "--output", str(tmp_path)])
    roles = {r.role for r in simulator.requests}
    simulator.reset()
    again = RunDir.for_output(tmp_path, "qwen3.8-max", kind)
    assert code == 0 and roles == {"judge"}  # the baseline is never asked again
    result = read_record(again.rejudge, RejudgeFile)
    assert result.compared == 9 and result.flips == []
    assert read_record(again.run, RunFile).config.candidate.kind == kind
