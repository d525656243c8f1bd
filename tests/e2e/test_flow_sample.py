"""A fault-free run of the sample dataset through the real flow, CLI and simulator."""

import hashlib
import json

import pytest

from conftest import MARKER
from cli import main
from mobilemem.config import load_config
from mobilemem.dataset import CandidateQuestion
from mobilemem.fingerprints import answer_fingerprint
from mobilemem.records import (
    AnswerResponseFile,
    IndexResponseFile,
    JobFile,
    JudgeSettingsFile,
    JudgmentFile,
    MemoryUsageFile,
    MetricsFile,
    ResultLine,
    RunFile,
    SessionFile,
    SummaryFile,
)
from mobilemem.rundir import read_lines, read_record
from mobilemem.summary import summarize_run
from e2e.runs import API_KEY, summary

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sample_run(baseline_run):
    return baseline_run


def test_exit_0_and_every_file_of_the_layout(sample_run):
    code, run, _, _ = sample_run
    assert code == 0
    manifest = read_record(run.run, RunFile)
    assert manifest.state == "completed" and manifest.finished_at and not manifest.simulated
    assert set(manifest.prompt_sha256) == {"prompts/qa_text_memory.txt", "reme/plugin.yaml", "reme/answer_step.yaml"}
    assert manifest.package_versions["prefect"].startswith("3.9")
    assert manifest.candidate.reme_version == manifest.package_versions["reme-ai"] == "0.4.2.0"
    assert (manifest.candidate.preset, manifest.candidate.plugin, manifest.candidate.inject_runtime_state) == (
        "benchmark", "mobilemem", False)
    read_record(run.judge_settings, JudgeSettingsFile)
    assert run.errors.read_text() == "" and run.cleanup_errors.read_text() == ""
    assert manifest.dataset_revision_status == "declared"  # the sample holds no mobilemem-manifest.json
    assert "user 0: sessions 4/4" in run.log.read_text()
    for user_id in manifest.users:
        user = run.user(user_id)
        assert all(read_record(p, SessionFile).success for p in user.sessions.glob("*.json"))
        assert len(list(user.sessions.glob("*.json"))) == 4
        assert read_record(user.index_response, IndexResponseFile).success
        assert read_record(user.memory_usage, MemoryUsageFile).sessions == 4
    memories = {u: read_record(run.user(u).memory_usage, MemoryUsageFile).memory_fingerprint for u in manifest.users}
    assert len(set(memories.values())) == len(memories) and all(len(f) == 64 for f in memories.values())
    config = load_config()
    for planned in manifest.questions:
        q = run.user(planned.user_id).question(planned.question_id)
        job = read_record(q.job, JobFile)
        assert job.question_id == planned.question_id
        answer = read_record(q.answer_response, AnswerResponseFile)
        assert answer.response.success
        assert answer.answer_fingerprint == answer_fingerprint(
            memories[planned.user_id], CandidateQuestion(user_id=job.user_id, question_id=job.question_id,
                                                         question=job.question), config.candidate)
        judgment = read_record(q.judgment, JudgmentFile)
        assert judgment.label == "CORRECT" and len(judgment.judgment_fingerprint) == 64
        read_record(q.metrics, MetricsFile)
        assert not q.error.exists()


def test_run_json_records_remes_application_configuration_without_credentials(sample_run, simulator):
    """The planted LLM_API_KEY and EMBEDDING_API_KEY were in ReMe's resolved configuration (its preset
    reads them from the environment): excluded by name; the simulator's base URL stays."""
    _, run, _, _ = sample_run
    recorded = read_record(run.run, RunFile).reme_app_config
    canonical = json.dumps(recorded.config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert recorded.sha256 == hashlib.sha256(canonical.encode()).hexdigest()
    assert recorded.config["workspace_dir"] == "<users/UID/workspace>" and recorded.config["plugins"] == ["mobilemem"]
    for llm in recorded.config["components"]["as_llm"].values():
        assert llm["credential"] == {"api_key": "<excluded>", "base_url": simulator.base_url}
        assert llm["max_retries"] == 0
    assert recorded.config["jobs"]["auto_memory"]["steps"] == [{"backend": "auto_memory_step", "agent_wrapper": "bench"}]
    assert [(s.job, s.step) for s in recorded.omitted_steps] == [("auto_memory", "auto_tag_step")]
    text = run.run.read_text()
    assert API_KEY not in text and "sk-embedding-unused" not in text and str(run.user(0).workspace) not in text


def test_summary_and_results_are_a_function_of_the_files(sample_run, capsys):
    _, run, _, _ = sample_run
    written = summary(run)
    assert (written.expected, written.answered, written.judged, written.scored) == (9, 9, 9, 9)
    assert written.overall.accuracy == 1.0 and written.gaps == {}
    recomputed, results = summarize_run(run.root)
    assert recomputed == written
    assert read_lines(run.results, ResultLine) == results
    before = run.summary.read_bytes(), run.results.read_bytes()
    assert main(["summarize", str(run.root)]) == 0
    assert (run.summary.read_bytes(), run.results.read_bytes()) == before
    assert "scored 9/9 questions" in capsys.readouterr().out


def test_usage_equals_the_simulators_successful_candidate_requests(sample_run):
    _, run, requests, _ = sample_run
    usage = summary(run).usage
    candidate = [r for r in requests if r.role in ("ingest", "answer", "compression") and r.status == 200]
    judge = [r for r in requests if r.role == "judge"]
    assert len(judge) == 9
    memory = sum(r.usage["total_tokens"] for r in candidate if r.role == "ingest")
    answer = sum(r.usage["total_tokens"] for r in candidate if r.role == "answer")
    assert usage.memory.tokens.value == memory and usage.answer.tokens.value == answer
    assert usage.memory.requests + usage.answer.requests == len(candidate)
    assert usage.mean_tokens_per_user.value == (memory + answer) / 3
    assert usage.mean_tokens_per_question.value == answer / 9


def test_the_candidate_never_sees_a_reference_and_no_key_is_written(sample_run):
    _, run, requests, _ = sample_run
    candidate = [r for r in requests if r.role != "judge"]
    assert not [r.id for r in candidate if MARKER in json.dumps(r.body, ensure_ascii=False)]
    leaked = [p for p in run.root.rglob("*") if p.is_file() and API_KEY.encode() in p.read_bytes()]
    assert leaked == []


def test_existing_run_directory_is_refused_untouched(sample_run, sample_root, capsys, monkeypatch, simulator):
    _, run, _, _ = sample_run
    before = sorted((p.relative_to(run.root), p.stat().st_mtime_ns) for p in run.root.rglob("*"))
    monkeypatch.setenv("LLM_API_KEY", API_KEY)
    monkeypatch.setenv("LLM_BASE_URL", simulator.base_url)
    assert main(["--dataset", str(sample_root), "--output", str(run.root.parents[1])]) == 1
    assert "already exists" in capsys.readouterr().err
    assert sorted((p.relative_to(run.root), p.stat().st_mtime_ns) for p in run.root.rglob("*")) == before


def test_missing_credentials_refuse_in_one_line(sample_root, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("LLM_API_KEY", raising=False)
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    assert main(["--dataset", str(sample_root), "--output", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "LLM_API_KEY" in err and "--simulate" in err
    assert not (tmp_path / "mobilemem").exists()


def test_simulate_runs_without_credentials(sample_root, tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_API_KEY", "ignored")
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens: --simulate must ignore it
    assert main(["--dataset", str(sample_root), "--output", str(tmp_path), "--simulate", "--users", "2",
                 "--limit-questions", "1"]) == 0
    written = read_record(tmp_path / "mobilemem" / "qwen3.8-max" / "summary.json", SummaryFile)
    assert written.simulated and written.scored == 1 and written.users == 1


def test_the_judge_sees_only_question_references_evidence_and_the_final_answer(sample_run, sample_root):
    from mobilemem.dataset import load_dataset
    from mobilemem_judge import fill

    _, run, requests, _ = sample_run
    judge_questions = load_dataset(sample_root).judge_questions
    expected = set()
    for qid, question in judge_questions.items():
        answer = read_record(run.user(question.user_id).question(qid).answer_response, AnswerResponseFile)
        expected.add(fill("mobilemem-omni-judge", question, answer.response.answer))
    sent = set()
    for request in (r for r in requests if r.role == "judge"):
        [message] = request.body["messages"]
        [part] = message["content"]
        sent.add(part["text"])
        assert "tools" not in request.body
    assert sent == expected
