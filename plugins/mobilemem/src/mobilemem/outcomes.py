"""Each selected question's outcome, read from its own files (DESIGN §5): what summary.json counts.

A question is *scored* when it was answered and judged and has its metrics. Every file is read
through `mobilemem.run_reader` (no link followed, every record validated); a damaged record makes
its question `damaged` (never scored) and is one line of the reader's `damaged`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mobilemem.records import (
    AnswerResponseFile,
    AttributionFile,
    ErrorFile,
    JudgmentFile,
    MetricsFile,
    PlannedQuestion,
)
from mobilemem.run_reader import RunReader


@dataclass(frozen=True)
class Outcome:
    planned: PlannedQuestion
    answer: AnswerResponseFile | None
    judgment: JudgmentFile | None
    metrics: MetricsFile | None
    error: ErrorFile | None
    attribution: AttributionFile | None
    damaged: bool = False  # one of its answer, judgment, metrics or error files could not be trusted
    answer_damaged: bool = False  # its answer-response.json could not be trusted: its tokens are unknown

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


def read_outcomes(reader: RunReader) -> list[Outcome]:
    """One outcome per question of run.json's plan, in its order."""
    outcomes = []
    for planned in reader.plan.questions:
        q = reader.run.user(planned.user_id).question(planned.question_id)
        before = len(reader.damaged)
        answer = reader.tolerant(q.answer_response, AnswerResponseFile)
        answer_damaged = len(reader.damaged) > before
        records = (reader.tolerant(q.judgment, JudgmentFile), reader.tolerant(q.metrics, MetricsFile),
                   reader.tolerant(q.error, ErrorFile))
        damaged = len(reader.damaged) > before
        outcomes.append(Outcome(planned, answer, *records, reader.tolerant(q.attribution, AttributionFile),
                                damaged, answer_damaged))
    return outcomes
