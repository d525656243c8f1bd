"""summary.json and results.jsonl as a pure function of the other run-directory files (DESIGN §5, §7).

The plan (scheduled users, selected questions) comes from run.json; each question's outcome from
its own files. A question is *scored* when it was answered and judged: that one set is the
denominator of accuracy, F1 and BLEU-1 alike. Gaps are counted by stage and reason from error.json.
Usage policy v2: memory cost only from sessions/*.json, answer cost only from answer-response.json;
judge usage never counts. Unknown token totals stay null, and a mean never counts an unknown as
0: a user or question whose token count is unknown (a successful request of it reported no usage)
is left out of the mean, and `known` says how many of the denominator's units it covers. The
evidence split counts the scored questions by their attribution.json (written by the judge's
analysis, which this module never imports).
"""

from __future__ import annotations

import os
import socket
from collections import Counter, defaultdict
from datetime import datetime
from dataclasses import dataclass
from pathlib import Path

from mobilemem.records import (
    AnswerResponseFile,
    AttributionFile,
    ErrorFile,
    ErrorLine,
    EvidenceCell,
    EvidenceSummary,
    JudgmentFile,
    MeanTokens,
    MetricsFile,
    ObservedRequest,
    PlannedQuestion,
    ResultLine,
    ReusedSummary,
    ReuseFile,
    RunFile,
    Score,
    SessionFile,
    SummaryFile,
    UsageSummary,
)
from mobilemem.rundir import RunDir, read_lines, read_record
from mobilemem.usage import known_tokens, summarize


@dataclass(frozen=True)
class _Outcome:
    planned: PlannedQuestion
    answer: AnswerResponseFile | None
    judgment: JudgmentFile | None
    metrics: MetricsFile | None
    error: ErrorFile | None
    attribution: AttributionFile | None

    @property
    def answered(self) -> bool:
        return self.answer is not None and self.answer.response is not None and self.answer.response.success

    @property
    def judged(self) -> bool:
        return self.judgment is not None and self.judgment.success

    @property
    def scored(self) -> bool:
        return self.answered and self.judged and self.metrics is not None

    @property
    def status(self) -> str:
        if self.scored:
            return "scored"
        return self.error.stage if self.error else "not_run"


def _maybe(path: Path, model):
    return read_record(path, model) if path.exists() else None


def _outcomes(run: RunDir, plan: RunFile) -> list[_Outcome]:
    outcomes = []
    for planned in plan.questions:
        q = run.user(planned.user_id).question(planned.question_id)
        outcomes.append(_Outcome(planned, _maybe(q.answer_response, AnswerResponseFile),
                                 _maybe(q.judgment, JudgmentFile), _maybe(q.metrics, MetricsFile),
                                 _maybe(q.error, ErrorFile), _maybe(q.attribution, AttributionFile)))
    return outcomes


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _score(outcomes: list[_Outcome]) -> Score:
    scored = [o.metrics for o in outcomes if o.scored and o.metrics]
    return Score(expected=len(outcomes), scored=len(scored), accuracy=_mean([float(m.llm_judge) for m in scored]),
                 f1=_mean([m.f1 for m in scored]), bleu1=_mean([m.bleu1 for m in scored]))


def _by(outcomes: list[_Outcome], key) -> dict[str, Score]:
    groups: dict[str, list[_Outcome]] = defaultdict(list)
    for outcome in outcomes:
        groups[str(key(outcome.planned))].append(outcome)
    return {name: _score(group) for name, group in sorted(groups.items())}


def _cell(outcomes: list[_Outcome], retrieved: bool, opened: bool) -> EvidenceCell:
    labels = [o.metrics.llm_judge for o in outcomes if o.metrics and o.attribution
              and (o.attribution.retrieved_evidence_session, o.attribution.opened_evidence_image) == (retrieved, opened)]
    return EvidenceCell(retrieved=retrieved, opened=opened, questions=len(labels), correct=sum(labels),
                        accuracy=_mean([float(label) for label in labels]))


def _evidence(outcomes: list[_Outcome]) -> EvidenceSummary:
    """The scored questions split by attribution.json: did a search hit an evidence session, did the
    agent open an evidence image; a scored question without attribution.json is only counted."""
    scored = [o for o in outcomes if o.scored]
    attributed = [o for o in scored if o.attribution is not None]
    opened = [o for o in attributed if o.attribution and o.attribution.opened_evidence_image]
    return EvidenceSummary(
        attributed=len(attributed), unattributed=len(scored) - len(attributed),
        without_evidence_image=sum(not o.attribution.evidence_images for o in attributed if o.attribution),
        retrieval_miss=_cell(attributed, False, False), retrieved_not_opened=_cell(attributed, True, False),
        opened_not_retrieved=_cell(attributed, False, True), retrieved_and_opened=_cell(attributed, True, True),
        opened_answered_wrong=sum(o.metrics.llm_judge == 0 for o in opened if o.metrics))


def _known_tokens(requests: list[ObservedRequest]) -> int | None:
    return known_tokens(summarize(requests))


def _mean_tokens(units: list[list[ObservedRequest]], attempted: int, completed: int, reused: int) -> MeanTokens:
    """The mean over the units (users, questions) whose token count is known; `known` of `denominator`."""
    known = [t for t in map(_known_tokens, units) if t is not None]
    tokens = sum(known) if known else None
    return MeanTokens(value=tokens / len(known) if known else None, tokens=tokens, denominator=len(units),
                      known=len(known), attempted=attempted, completed=completed, reused=reused)


def _reuse_records(run: RunDir, plan: RunFile) -> dict[int, ReuseFile]:
    return {u: read_record(run.user(u).reuse, ReuseFile) for u in plan.users if run.user(u).reuse.is_file()}


def _session_requests(run: RunDir, user_id: int) -> list[list[ObservedRequest]]:
    sessions = run.user(user_id).sessions
    return [read_record(p, SessionFile).requests for p in sorted(sessions.glob("*.json"))] if sessions.is_dir() else []


def _usage(run: RunDir, plan: RunFile, outcomes: list[_Outcome]) -> UsageSummary:
    """Usage policy v2: what this run sent. Memories and answers copied from an earlier run
    (`reuse.json`) are reported apart, with their original usage, and are in no mean."""
    reuse = _reuse_records(run, plan)
    fresh_users = [u for u in plan.users if u not in reuse or reuse[u].memory is None]
    copied_answers = {q for r in reuse.values() for q in r.answers}
    per_user = {u: [r for s in _session_requests(run, u) for r in s] for u in fresh_users}
    memory = summarize(r for requests in per_user.values() for r in requests)
    fresh = [o for o in outcomes if o.planned.question_id not in copied_answers]
    per_question = [o.answer.requests if o.answer else [] for o in fresh]
    for outcome, requests in zip(fresh, per_question):
        if outcome.planned.user_id in per_user:
            per_user[outcome.planned.user_id] += requests  # run.json plans questions of scheduled users only
    reused_sessions = [s for u in plan.users if u not in per_user for s in _session_requests(run, u)]
    copied = [o for o in outcomes if o.planned.question_id in copied_answers]
    return UsageSummary(
        memory=memory, answer=summarize(r for requests in per_question for r in requests),
        mean_tokens_per_user=_mean_tokens(
            list(per_user.values()), sum(bool(_session_requests(run, u)) for u in fresh_users),
            sum(run.user(u).memory_usage.exists() for u in fresh_users), len(plan.users) - len(fresh_users)),
        mean_tokens_per_question=_mean_tokens(per_question, sum(o.answer is not None for o in fresh),
                                              sum(o.answered for o in fresh), len(copied)),
        reused=ReusedSummary(
            users=len(plan.users) - len(fresh_users), sessions=len(reused_sessions), answers=len(copied),
            judgments=sum(len(r.judgments) for r in reuse.values()),
            memory=summarize(r for s in reused_sessions for r in s) if reused_sessions else None,
            answer=summarize(r for o in copied if o.answer for r in o.answer.requests) if copied else None))


def _result(outcome: _Outcome) -> ResultLine:
    response = outcome.answer.response if outcome.answer else None
    return ResultLine(
        user_id=outcome.planned.user_id, question_id=outcome.planned.question_id,
        language=outcome.planned.language, difficulty=outcome.planned.difficulty, status=outcome.status,
        prediction=response.answer if response else None, gold=outcome.planned.gold,
        label=outcome.judgment.label if outcome.judgment else None,
        f1=outcome.metrics.f1 if outcome.metrics else None, bleu1=outcome.metrics.bleu1 if outcome.metrics else None,
        answer_tokens=outcome.answer.usage.tokens.value if outcome.answer else None,
        answer_latency_s=outcome.answer.latency_s if outcome.answer else None)


def summarize_run(root: Path) -> tuple[SummaryFile, list[ResultLine]]:
    run = RunDir(root)
    plan = read_record(run.run, RunFile)
    outcomes = _outcomes(run, plan)
    gaps: dict[str, Counter[str]] = defaultdict(Counter)
    for outcome in outcomes:
        if outcome.error and not outcome.scored:
            gaps[outcome.error.stage][outcome.error.reason] += 1
    summary = SummaryFile(
        simulated=plan.simulated, state=plan.state, users=len(plan.users), expected=len(outcomes),
        answered=sum(o.answered for o in outcomes), judged=sum(o.judged for o in outcomes),
        scored=sum(o.scored for o in outcomes), overall=_score(outcomes),
        by_language=_by(outcomes, lambda p: p.language), by_difficulty=_by(outcomes, lambda p: p.difficulty),
        gaps={stage: dict(sorted(reasons.items())) for stage, reasons in sorted(gaps.items())},
        usage=_usage(run, plan, outcomes), cleanup_error_count=len(read_lines(run.cleanup_errors, ErrorLine)),
        not_attempted=sum(o.status == "not_run" for o in outcomes), evidence=_evidence(outcomes))
    return summary, [_result(o) for o in outcomes]


def liveness(plan: RunFile, now: datetime, stale_after_s: float) -> str | None:
    """Why a run that says `running` is not alive (its process is gone, or its heartbeat stopped),
    or None when it may still be running (or has ended)."""
    if plan.state != "running":
        return None
    beat = plan.heartbeat_at or plan.started_at
    where = f"pid {plan.pid} on {plan.host}, last heartbeat {beat.isoformat(timespec='seconds')}"
    if plan.host == socket.gethostname() and plan.pid is not None and not _process_exists(plan.pid):
        return f"its process is gone ({where})"
    if (now - beat).total_seconds() > stale_after_s:
        return f"its heartbeat stopped ({where})"
    return None


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
