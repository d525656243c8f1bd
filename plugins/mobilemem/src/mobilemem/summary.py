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

Every file is read through `mobilemem.run_reader` (no link followed, every record validated). A
damaged record costs only its own item: a question whose answer, judgment, metrics or error file is
damaged has status `damaged` (never scored), a damaged session is a unit of unknown tokens, a
damaged attribution leaves its question unattributed; each is one line of `damaged`.
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
    UserUsage,
)
from mobilemem.run_reader import RunReader
from mobilemem.usage import known_tokens, summarize


@dataclass(frozen=True)
class _Outcome:
    planned: PlannedQuestion
    answer: AnswerResponseFile | None
    judgment: JudgmentFile | None
    metrics: MetricsFile | None
    error: ErrorFile | None
    attribution: AttributionFile | None
    damaged: bool = False  # one of its answer, judgment, metrics or error files could not be trusted

    @property
    def answered(self) -> bool:
        return self.answer is not None and self.answer.response is not None and self.answer.response.success

    @property
    def judged(self) -> bool:
        return self.judgment is not None and self.judgment.success

    @property
    def scored(self) -> bool:
        return not self.damaged and self.answered and self.judged and self.metrics is not None

    @property
    def status(self) -> str:
        if self.damaged:
            return "damaged"
        if self.scored:
            return "scored"
        return self.error.stage if self.error else "not_run"


def _outcomes(reader: RunReader) -> list[_Outcome]:
    outcomes = []
    for planned in reader.plan.questions:
        q = reader.run.user(planned.user_id).question(planned.question_id)
        before = len(reader.damaged)
        records = (reader.tolerant(q.answer_response, AnswerResponseFile), reader.tolerant(q.judgment, JudgmentFile),
                   reader.tolerant(q.metrics, MetricsFile), reader.tolerant(q.error, ErrorFile))
        damaged = len(reader.damaged) > before
        outcomes.append(_Outcome(planned, *records, reader.tolerant(q.attribution, AttributionFile), damaged))
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


def _mean_tokens(units: list[list[ObservedRequest] | None], attempted: int, completed: int, reused: int,
                 ) -> MeanTokens:
    """The mean over the units (users, questions) whose token count is known (None: a unit with a
    damaged record); `known` of `denominator`."""
    known = [t for t in (_known_tokens(u) if u is not None else None for u in units) if t is not None]
    tokens = sum(known) if known else None
    return MeanTokens(value=tokens / len(known) if known else None, tokens=tokens, denominator=len(units),
                      known=len(known), attempted=attempted, completed=completed, reused=reused)


def _reuse_records(reader: RunReader) -> dict[int, ReuseFile]:
    records = {u: reader.tolerant(reader.run.user(u).reuse, ReuseFile) for u in reader.plan.users}
    return {u: record for u, record in records.items() if record is not None}


def _session_requests(reader: RunReader, user_id: int) -> list[list[ObservedRequest] | None]:
    """Each session's requests; None for a damaged session file."""
    sessions = (reader.tolerant(p, SessionFile) for p in reader.files(reader.run.user(user_id).sessions, ".json"))
    return [s.requests if s is not None else None for s in sessions]


def _joined(units: list[list[ObservedRequest] | None]) -> list[ObservedRequest] | None:
    """The units' requests together; None when one of them is damaged."""
    return None if None in units else [r for unit in units if unit for r in unit]


def _user_usage(user_id: int, sessions: list[list[ObservedRequest] | None],
                answers: list[list[ObservedRequest] | None], reused: bool) -> UserUsage:
    memory, answer = _joined(sessions), _joined(answers)
    return UserUsage(user_id=user_id, sessions=len(sessions), reused=reused,
                     memory_tokens=None if memory is None else _known_tokens(memory),
                     answer_tokens=None if answer is None else _known_tokens(answer))


def _usage(reader: RunReader, outcomes: list[_Outcome]) -> UsageSummary:
    """Usage policy v2: what this run sent. Memories and answers copied from an earlier run
    (`reuse.json`) are reported apart, with their original usage, and are in no mean."""
    run, plan = reader.run, reader.plan
    reuse = _reuse_records(reader)
    fresh_users = [u for u in plan.users if u not in reuse or reuse[u].memory is None]
    copied_answers = {q for r in reuse.values() for q in r.answers}
    sessions = {u: _session_requests(reader, u) for u in plan.users}
    memory = summarize(r for u in fresh_users for s in sessions[u] if s for r in s)
    fresh = [o for o in outcomes if o.planned.question_id not in copied_answers]
    per_question = [None if o.damaged else o.answer.requests if o.answer else [] for o in fresh]
    answers: dict[int, list[list[ObservedRequest] | None]] = defaultdict(list)
    for outcome, requests in zip(fresh, per_question):
        answers[outcome.planned.user_id].append(requests)
    per_user = {u: _joined([*sessions[u], *answers[u]]) for u in fresh_users}
    reused_sessions = [s for u in plan.users if u not in per_user for s in sessions[u] if s is not None]
    copied = [o for o in outcomes if o.planned.question_id in copied_answers]
    return UsageSummary(
        memory=memory, answer=summarize(r for requests in per_question if requests for r in requests),
        mean_tokens_per_user=_mean_tokens(
            list(per_user.values()), sum(bool(sessions[u]) for u in fresh_users),
            sum(run.user(u).memory_usage.exists() for u in fresh_users), len(plan.users) - len(fresh_users)),
        mean_tokens_per_question=_mean_tokens(per_question, sum(o.answer is not None for o in fresh),
                                              sum(o.answered for o in fresh), len(copied)),
        reused=ReusedSummary(
            users=len(plan.users) - len(fresh_users), sessions=len(reused_sessions), answers=len(copied),
            judgments=sum(len(r.judgments) for r in reuse.values()),
            memory=summarize(r for s in reused_sessions for r in s) if reused_sessions else None,
            answer=summarize(r for o in copied if o.answer for r in o.answer.requests) if copied else None),
        users=[_user_usage(u, sessions[u], answers[u], reused=u not in per_user) for u in plan.users])


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
    """Raises NotARunDirectory or DamagedFile when run.json cannot be trusted; any other damage is
    in the summary's `damaged`."""
    reader = RunReader.open(root)
    plan = reader.plan
    outcomes = _outcomes(reader)
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
        usage=_usage(reader, outcomes),
        cleanup_error_count=len(reader.lines(reader.run.cleanup_errors, ErrorLine, tolerant=True)),
        not_attempted=sum(o.status == "not_run" for o in outcomes), evidence=_evidence(outcomes),
        damaged=reader.damaged)
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
