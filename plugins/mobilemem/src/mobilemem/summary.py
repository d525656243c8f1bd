"""summary.json and results.jsonl as a pure function of the other run-directory files (DESIGN §5, §7).

The plan (scheduled users, selected questions) comes from run.json; each question's outcome from
its own files (`mobilemem.outcomes`). A question is *scored* when it was answered and judged: that
one set is the denominator of the headline's accuracy, F1 and BLEU-1 alike; `official` is the
secondary figure under the official evaluator's accounting (`mobilemem.scores`). Gaps are counted by
stage and reason from error.json. Usage (policy v3, `mobilemem.run_usage`): this run's cost, the
means over every scheduled user and expected question. The evidence split counts the scored
questions by their attribution.json (written by the judge's analysis, which this module never
imports).

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
from pathlib import Path

from mobilemem.outcomes import Outcome, read_outcomes
from mobilemem.records import ErrorLine, EvidenceCell, EvidenceSummary, ResultLine, RunFile, SummaryFile
from mobilemem.run_reader import RunReader
from mobilemem.run_usage import summarize_usage
from mobilemem.scores import by, difficulty, headline, language, mean, official_accounting


def _cell(outcomes: list[Outcome], retrieved: bool, opened: bool) -> EvidenceCell:
    labels = [o.metrics.llm_judge for o in outcomes if o.metrics and o.attribution
              and (o.attribution.retrieved_evidence_session, o.attribution.opened_evidence_image) == (retrieved, opened)]
    return EvidenceCell(retrieved=retrieved, opened=opened, questions=len(labels), correct=sum(labels),
                        accuracy=mean([float(label) for label in labels]))


def _evidence(outcomes: list[Outcome]) -> EvidenceSummary:
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


def _result(outcome: Outcome) -> ResultLine:
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
    outcomes = read_outcomes(reader)
    gaps: dict[str, Counter[str]] = defaultdict(Counter)
    for outcome in outcomes:
        if outcome.error and not outcome.scored:
            gaps[outcome.error.stage][outcome.error.reason] += 1
    summary = SummaryFile(
        simulated=plan.simulated, state=plan.state, users=len(plan.users), expected=len(outcomes),
        answered=sum(o.answered for o in outcomes), judged=sum(o.judged for o in outcomes),
        scored=sum(o.scored for o in outcomes), overall=headline(outcomes),
        by_language=by(outcomes, language, headline), by_difficulty=by(outcomes, difficulty, headline),
        official=official_accounting(outcomes),
        gaps={stage: dict(sorted(reasons.items())) for stage, reasons in sorted(gaps.items())},
        usage=summarize_usage(reader, outcomes),
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
