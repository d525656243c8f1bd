"""Hand-made run directories built with the record models: for the `compare` tests run.json,
results.jsonl and job.json, nothing else; for the report tests a finished run (`finished_run`)."""

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from lifecycle.summary_files import write_summary
from mobilemem.config import load_config
from mobilemem.records import (DEFAULT_KIND, AnswerResponse, AnswerResponseFile, CandidateProvenance, ErrorFile,
                               JobFile, JudgeSettingsFile, JudgmentFile, MetricsFile, PlannedQuestion, ResultLine,
                               RunFile, ToolCallRecord, Usage)
from mobilemem.rundir import RunDir, append_line, write_record

DATA_SHA = "d" * 64
QUESTIONS_SHA = "q" * 64
IMAGES_SHA = "i" * 64
# (user, question, language, difficulty): user 0 is English, user 1 Chinese
QUESTIONS = [(0, "0_q_1", "en", "easy"), (0, "0_q_2", "en", "medium"), (0, "0_q_3", "en", "easy"),
             (1, "1_q_1", "Chinese", "easy"), (1, "1_q_2", "Chinese", None), (1, "1_q_3", "Chinese", "medium")]


def result(user_id: int, question_id: str, language: str, difficulty: str | None, *, correct: bool = True,
           status: str = "scored", f1: float = 0.5, bleu1: float = 0.25) -> ResultLine:
    scored = status == "scored"
    return ResultLine(user_id=user_id, question_id=question_id, language=language, difficulty=difficulty,
                      status=status, prediction=(f"right {question_id}" if correct else f"wrong {question_id}")
                      if status in ("scored", "judge") else None,
                      gold=[f"gold {question_id}"], label=("CORRECT" if correct else "WRONG") if scored else None,
                      f1=f1 if scored else None, bleu1=bleu1 if scored else None, answer_tokens=100,
                      answer_latency_s=0.5)


def make_run(root: Path, lines: list[ResultLine], *, run_id: str | None = "aaaaaaaa-1111",
             started_at: datetime = datetime(2026, 12, 1, 10, tzinfo=UTC), model: str = "model-a",
             data_sha256: str = DATA_SHA, questions_sha256: str = QUESTIONS_SHA, jobs: bool = True,
             images_sha256: dict[str, str] | None = None) -> Path:
    """`images_sha256`: by default IMAGES_SHA for every user of `lines`."""
    run = RunDir(root)
    users = sorted({line.user_id for line in lines})
    write_record(run.run, RunFile(
        args={"dataset": "d", "output": "o"},
        config=load_config().model_copy(update={"model": model}), package_versions={}, git_commit=None, git_dirty=None,
        dataset_path="/data/MobileMem-Omni", dataset_revision=None, data_sha256=data_sha256,
        questions_sha256=questions_sha256, prompt_sha256={}, started_at=started_at, finished_at=started_at,
        images_sha256={str(u): IMAGES_SHA for u in users} if images_sha256 is None else images_sha256,
        flow_run_id=run_id, simulated=True, state="completed", users=users))
    run.results.write_bytes(b"")
    for line in lines:
        append_line(run.results, line)
        if jobs:
            write_record(run.user(line.user_id).question(line.question_id).job, JobFile(
                user_id=line.user_id, question_id=line.question_id, question=f"What was shown in {line.question_id}?"))
    return root


def all_correct(**changes: dict) -> list[ResultLine]:
    """Every question of QUESTIONS, correct with F1 0.5 and BLEU-1 0.25 unless `changes[qid]` says otherwise."""
    return [result(*q, **changes.get(q[1], {})) for q in QUESTIONS]


def provenance(kind: str, plugin_package: str | None = None) -> CandidateProvenance:
    reme = kind == DEFAULT_KIND
    return CandidateProvenance(kind=kind, reme_version="0.4.2.0", agentscope_version="2.0.10",
                               preset="benchmark" if reme else "none", plugin="mobilemem" if reme else "none",
                               plugin_version="0.1.0", inject_runtime_state=False, plugin_package=plugin_package)


def _judge_settings(model: str) -> JudgeSettingsFile:
    return JudgeSettingsFile(model=model, model_from_env=False, temperature=0.0, extra_body={}, max_tokens=4096,
                             stream=False, rubric="mobilemem-omni-judge", rubric_sha256="r" * 64,
                             protocol="one-user-message", parser_version=2)


def finished_run(root: Path, calls: Sequence[ToolCallRecord] = (), *, kind: str = DEFAULT_KIND,
                 plugin_package: str | None = None, judge_model: str | None = "judge-model-x",
                 answer_gap: bool = False) -> RunDir:
    """A finished run of question 0_q_1, scored (CORRECT, F1 1.0, BLEU-1 0.5) after an answer that
    made `calls`, and with `answer_gap` also 0_q_2 (Chinese), an answer gap; summary.json and
    results.jsonl written as a run writes them. `judge_model` None: no judge-settings.json."""
    run, now = RunDir(root), datetime.now(UTC)
    root.mkdir(parents=True)
    planned = [PlannedQuestion(user_id=0, question_id="0_q_1", language="en", difficulty=None, gold="9")]
    if answer_gap:
        planned.append(PlannedQuestion(user_id=0, question_id="0_q_2", language="zh", difficulty="hard", gold="5"))
    config = load_config()
    write_record(run.run, RunFile(
        args={"dataset": "d", "output": "o"},
        config=config.model_copy(update={"candidate": config.candidate.model_copy(update={"kind": kind})}),
        package_versions={}, git_commit=None, git_dirty=None, dataset_path="d", dataset_revision=None,
        data_sha256="0", questions_sha256="0", prompt_sha256={}, started_at=now, simulated=True,
        state="completed", users=[0], questions=planned, candidate=provenance(kind, plugin_package)))
    if judge_model is not None:
        write_record(run.judge_settings, _judge_settings(judge_model))
    question = run.user(0).question("0_q_1")
    write_record(question.answer_response, AnswerResponseFile(
        started_at=now, finished_at=now, user_id=0, question_id="0_q_1", usage=Usage(), requests=[], latency_s=0.1,
        response=AnswerResponse(success=True, answer="9", finished_reason="completed", tool_calls=list(calls))))
    write_record(question.judgment, JudgmentFile(started_at=now, finished_at=now, user_id=0, question_id="0_q_1",
                                                 success=True, label="CORRECT", decided_by="json", raw_reply="{}",
                                                 usage=Usage(), requests=[]))
    write_record(question.metrics, MetricsFile(user_id=0, question_id="0_q_1", llm_judge=1, f1=1.0, bleu1=0.5,
                                               reference="9"))
    if answer_gap:
        write_record(run.user(0).question("0_q_2").error, ErrorFile(user_id=0, question_id="0_q_2", stage="answer",
                                                                     reason="HTTP 500", failure=None))
    write_summary(run.root)
    return run
