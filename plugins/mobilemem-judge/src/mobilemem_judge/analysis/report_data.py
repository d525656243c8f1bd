"""What report.html shows, read from a run directory's files: a pure function of them, like
`summarize`. The scores are summary.json's (the headline, and the official accounting beside it);
their intervals are bootstrapped over the same scored
set, read from results.jsonl (the two files are written together; a disagreement is refused).
Per-user cost is summary.json's (never recomputed here): an unknown count stays unknown.
Files are read through `mobilemem.run_reader`: a damaged run.json, summary.json or results.jsonl
refuses the report in one line; a damaged file of one question or session leaves out only what it
held (its detail says so) and is listed in the report's `damaged`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from mobilemem.errors import MobilememError
from mobilemem.records import (
    AnswerResponseFile,
    AttributionFile,
    ErrorFile,
    JobFile,
    JudgmentFile,
    ResultLine,
    RunFile,
    Score,
    SummaryFile,
    ToolCallRecord,
    UserUsage,
)
from mobilemem.rundir import QuestionDir
from mobilemem.run_reader import DamagedFile, NotARunDirectory, RunReader
from mobilemem_judge.analysis.run_header import RunHeader, run_header
from mobilemem_judge.analysis.stats import Interval, mean_interval
from mobilemem_judge.analysis.thumbnails import Thumbnails

R = TypeVar("R", bound=BaseModel)
EXCERPT = 600  # characters of a tool call's arguments (as JSON) and of its returned text shown, at most
EXCERPTS_BUDGET = 3_000_000  # characters for all of them: a long run shows shorter excerpts
EXCERPTS = ("arguments", "result")
MIN_EXCERPT = 120
AGREEMENT = 1e-9


class ReportError(MobilememError):
    """The run directory cannot be reported (missing or inconsistent files)."""


@dataclass(frozen=True)
class Group:
    """One row of a score table: summary.json's numbers and their 95% bootstrap intervals."""

    kind: str  # overall, language, difficulty
    name: str
    score: Score
    accuracy: Interval
    f1: Interval
    bleu1: Interval


@dataclass(frozen=True)
class QuestionRow:
    index: int
    user_id: int
    question_id: str
    status: str
    language: str
    difficulty: str
    question: str | None
    prediction: str | None
    gold: str
    label: str | None
    f1: float | None
    bleu1: float | None
    tokens: int | None
    iterations: int | None
    latency_s: float | None
    opened_evidence: bool | None = None
    retrieved_evidence: bool | None = None


@dataclass
class Report:
    run_dir: Path
    run: RunFile
    header: RunHeader
    summary: SummaryFile
    groups: list[Group]
    users: list[UserUsage] | None  # summary.json's per-user cost (None: an older summary)
    questions: list[QuestionRow]
    details: list[dict[str, Any]]
    thumbnails: Thumbnails = field(repr=False)
    damaged: list[str] = field(default_factory=list)  # files left out, one line each (run-relative)


def gold_text(gold: str | list[str]) -> str:
    return gold if isinstance(gold, str) else " | ".join(gold)


def _group(kind: str, name: str, score: Score, lines: list[ResultLine]) -> Group:
    scored = [line for line in lines if line.status == "scored"]
    accuracy = mean_interval([1.0 if line.label == "CORRECT" else 0.0 for line in scored])
    f1 = mean_interval([line.f1 or 0.0 for line in scored])
    bleu1 = mean_interval([line.bleu1 or 0.0 for line in scored])
    for metric, interval, expected in (("accuracy", accuracy, score.accuracy), ("F1", f1, score.f1),
                                       ("BLEU-1", bleu1, score.bleu1)):
        same = (interval.estimate is None) == (expected is None) and (
            expected is None or abs(interval.estimate - expected) <= AGREEMENT)
        if len(scored) != score.scored or not same:
            raise ReportError(f"summary.json and results.jsonl disagree on {kind} {name!r} ({metric}): run "
                              "`python flows/mobilemem.py summarize RUN_DIR` first")
    return Group(kind, name, score, accuracy, f1, bleu1)


def _groups(summary: SummaryFile, lines: list[ResultLine]) -> list[Group]:
    groups = [_group("overall", "all", summary.overall, lines)]
    for kind, scores, key in (("language", summary.by_language, lambda line: line.language),
                              ("difficulty", summary.by_difficulty, lambda line: str(line.difficulty))):
        for name, score in scores.items():
            groups.append(_group(kind, name, score, [line for line in lines if key(line) == name]))
    return groups


def _tool_step(call: ToolCallRecord, user_id: int, thumbnails: Thumbnails) -> dict[str, Any]:
    step: dict[str, Any] = {"name": call.name, "ok": call.ok, "error": call.error, "arguments": None}
    if call.arguments:
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        step["arguments"], step["arguments_chars"] = arguments[:EXCERPT], len(arguments)
    if call.result is not None:
        step["result"] = call.result[:EXCERPT]
        step["result_chars"] = call.result_chars
    path = (call.arguments or {}).get("path")
    if call.name == "read_image" and call.ok and isinstance(path, str):
        step["image"] = thumbnails.add(user_id, path)
    return step


def _question(reader: RunReader, index: int, line: ResultLine, paths: QuestionDir, thumbnails: Thumbnails,
              ) -> tuple[QuestionRow, dict[str, Any]]:
    before = len(reader.damaged)
    job = reader.tolerant(paths.job, JobFile)
    answer = reader.tolerant(paths.answer_response, AnswerResponseFile)
    judgment = reader.tolerant(paths.judgment, JudgmentFile)
    error = reader.tolerant(paths.error, ErrorFile) if line.status != "scored" else None
    attribution = reader.tolerant(paths.attribution, AttributionFile)
    damaged = reader.damaged[before:]
    response = answer.response if answer else None
    row = QuestionRow(
        index=index, user_id=line.user_id, question_id=line.question_id, status=line.status,
        language=line.language, difficulty=str(line.difficulty), question=job.question if job else None,
        prediction=line.prediction, gold=gold_text(line.gold), label=line.label, f1=line.f1, bleu1=line.bleu1,
        tokens=line.answer_tokens, iterations=response.iterations if response else None,
        latency_s=line.answer_latency_s,
        opened_evidence=attribution.opened_evidence_image if attribution else None,
        retrieved_evidence=attribution.retrieved_evidence_session if attribution else None)
    detail = {
        "user_id": line.user_id, "question_id": line.question_id, "status": line.status, "question": row.question,
        "gold": row.gold, "prediction": line.prediction, "label": line.label, "f1": line.f1, "bleu1": line.bleu1,
        "finished_reason": response.finished_reason if response else None,
        "iterations": row.iterations, "truncated": response.truncated if response else None,
        "answer_error": response.failure.message if response and response.failure and not response.success else None,
        "tools": [_tool_step(c, line.user_id, thumbnails) for c in response.tool_calls] if response else [],
        "refused_tool_calls": response.refused_tool_calls if response else 0,
        "retrieval": response.retrieval.model_dump(mode="json") if response and response.retrieval else None,
        "judge_reply": judgment.raw_reply if judgment else None,
        "judge_decided_by": judgment.decided_by if judgment else None,
        "judge_error": judgment.failure.message if judgment and judgment.failure and not judgment.success else None,
        "gap": {"stage": error.stage, "reason": error.reason,
                "detail": error.failure.message if error.failure else None} if error else None,
        "attribution": attribution.model_dump(mode="json") if attribution else None,
        "damaged": damaged,
    }
    return row, detail


def _fit_excerpts(details: list[dict[str, Any]]) -> None:
    """Shorten every excerpt (tool arguments and results) alike so that together they stay within
    EXCERPTS_BUDGET."""
    texts = [(t, name) for d in details for t in d["tools"] for name in EXCERPTS if t.get(name)]
    if sum(len(t[name]) for t, name in texts) <= EXCERPTS_BUDGET:
        return
    excerpt = max(MIN_EXCERPT, EXCERPTS_BUDGET // len(texts))
    for step, name in texts:
        step[name] = step[name][:excerpt]


def _open(run_dir: Path) -> tuple[RunReader, SummaryFile, list[ResultLine]]:
    """run.json, summary.json and results.jsonl, validated; ReportError (one line) otherwise."""
    try:
        reader = RunReader.open(run_dir)
        run = reader.run
        for needed in (run.summary, run.results):
            if reader.bytes_of(needed) is None:
                raise ReportError(f"{run.root} has no {needed.name}: not a finished run directory (run "
                                  "`python flows/mobilemem.py summarize RUN_DIR`)")
        return reader, reader.read(run.summary, SummaryFile), reader.lines(run.results, ResultLine)
    except (NotARunDirectory, DamagedFile) as exc:
        raise ReportError(str(exc)) from None


def load_report(run_dir: Path, thumbnails: Thumbnails | None = None) -> Report:
    reader, summary, lines = _open(Path(run_dir))
    run, plan = reader.run, reader.plan
    header = run_header(reader)
    thumbnails = thumbnails or Thumbnails(reader)
    rows, details = [], []
    for index, line in enumerate(lines):
        row, detail = _question(reader, index, line, run.user(line.user_id).question(line.question_id), thumbnails)
        rows.append(row)
        details.append(detail)
    _fit_excerpts(details)
    thumbnails.make()
    return Report(run.root, plan, header, summary, _groups(summary, lines), summary.usage.users, rows, details, thumbnails,
                  reader.damaged)
