"""results.jsonl and summary.json."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mobilemem.records.base import RunState, Label, RecordBase
from mobilemem.records.usage import Usage


class ResultLine(RecordBase):
    user_id: int
    question_id: str
    language: str
    difficulty: str | None
    status: Literal["scored", "history", "index", "answer", "judge", "not_run", "damaged"] = Field(
        description="scored, the stage of its gap, not_run (no outcome), or damaged (one of its records could "
                    "not be trusted when the summary was made: summary.json's `damaged` names it)")
    prediction: str | None
    gold: str | list[str]
    label: Label | None
    f1: float | None = Field(ge=0, le=1)
    bleu1: float | None = Field(ge=0, le=1)
    answer_tokens: int | None
    answer_latency_s: float | None

    @model_validator(mode="after")
    def _scored_lines_have_scores(self) -> ResultLine:
        if self.status == "scored" and None in (self.label, self.f1, self.bleu1):
            raise ValueError("a scored line needs its label, f1 and bleu1")
        return self


class Score(BaseModel):
    """The headline of a group: accuracy, F1 and BLEU-1 over its scored questions only (answered and
    judged); null when none was scored."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    expected: int
    scored: int
    accuracy: float | None
    f1: float | None
    bleu1: float | None


class OfficialScore(BaseModel):
    """A group under the official MobileMem evaluator's accounting: every expected question is in the
    denominator, and a question not scored counts as not correct (label 0, F1 0, BLEU-1 0)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    expected: int = Field(description="the denominator: every selected question of the group")
    scored: int = Field(description="questions counted with their own label, F1 and BLEU-1")
    not_scored: int = Field(description="questions not scored (a gap of any stage, not_run, damaged), each "
                                        "counted as label 0, F1 0, BLEU-1 0")
    accuracy: float | None = Field(description="CORRECT labels / expected (null only when nothing was expected)")
    f1: float | None = Field(description="sum of the scored questions' F1 / expected")
    bleu1: float | None = Field(description="sum of the scored questions' BLEU-1 / expected")


class OfficialAccounting(BaseModel):
    """The secondary figure, never the headline: this run's scores as the official MobileMem evaluator
    counts them (every expected question in the denominator, every question that is not scored
    counted as not correct), so that they can be set beside the published table."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    overall: OfficialScore
    by_language: dict[str, OfficialScore]
    by_difficulty: dict[str, OfficialScore]


class MeanTokens(BaseModel):
    """This run's observed cost over the whole denominator (usage policy v3, DESIGN §7.1): every unit
    (scheduled user, expected question) stays in it. A unit copied from an earlier run (`--reuse`) or
    never attempted cost this run nothing: a known 0. An unknown count is never averaged in as 0: when
    a unit's count is unknown (a damaged record, or a successful request of it that reported no
    usage), `value` is null, `tokens` the sum over the known units and `known` how many of them
    there are. Policy v2 summaries left reused and unknown units out: `value` = `tokens` / `known`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    value: float | None = Field(description="tokens / denominator when every unit is known, else null")
    tokens: int | None = Field(description="the sum over the units whose count is known (null when none is)")
    denominator: int = Field(description="scheduled users, or expected questions")
    known: int | None = Field(default=None, description="units whose count is known: its records read and every "
                                                        "successful request of it reported usage; a reused or never "
                                                        "attempted unit is a known 0 (null in older summaries)")
    attempted: int = Field(description="units this run began: a user whose memory it built (a session file or "
                                       "memory_usage.json of this run), a question it answered (answer-response.json)"
                                       "; a reused unit is not")
    completed: int = Field(description="of those, the completed: a memory (memory_usage.json), a successful answer")
    reused: int = Field(default=0, description="units copied from an earlier run (`--reuse`): in the denominator "
                                               "at 0 tokens (policy v2: left out of it)")


class ReusedSummary(BaseModel):
    """What this run copied from earlier runs, and what it cost there (never counted again here)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    users: int = 0  # memories copied
    sessions: int = 0
    answers: int = 0
    judgments: int = 0
    memory: Usage | None = Field(default=None, description="the copied sessions' usage, in the earlier run")
    answer: Usage | None = Field(default=None, description="the copied answers' usage, in the earlier run")


class UserUsage(BaseModel):
    """One scheduled user's tokens (usage policy v3); None: unknown (a damaged record, or a
    successful request that reported none)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    user_id: int
    sessions: int = Field(description="the user's session files")
    memory_tokens: int | None = Field(description="from the user's sessions/*.json")
    answer_tokens: int | None = Field(description="from the answers made in this run (copied ones are not counted)")
    reused: bool = Field(description="the memory was copied from an earlier run: its tokens are not this run's")


class UsageSummary(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    policy_version: Literal[2, 3] = Field(default=3, description="3: the means keep every unit in their "
                                          "denominator (a reused one at 0); 2 (older summaries) left reused and "
                                          "unknown units out")
    memory: Usage = Field(description="from sessions/*.json made in this run (the index makes no request)")
    answer: Usage = Field(description="from answer-response.json made in this run")
    mean_tokens_per_user: MeanTokens = Field(description="(memory + answer tokens of this run) / scheduled users")
    mean_tokens_per_question: MeanTokens = Field(description="answer tokens of this run / expected questions")
    reused: ReusedSummary = Field(default_factory=ReusedSummary)
    users: list[UserUsage] | None = Field(default=None, description="per scheduled user, in run.json's order "
                                          "(null in older summaries)")


class EvidenceCell(BaseModel):
    """The scored questions with attributions that share both facts, and how many were judged correct."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    retrieved: bool = Field(description="a bm25_search hit pointed into an evidence session")
    opened: bool = Field(description="read_image opened an evidence image")
    questions: int = 0
    correct: int = 0
    accuracy: float | None = None


class EvidenceSummary(BaseModel):
    """Scored questions split by what the agent did with the evidence (attribution.json)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    attributed: int = Field(description="scored questions with an attribution.json: the cells' total")
    unattributed: int = Field(description="scored questions without one (attribution failed or was not run)")
    without_evidence_image: int = Field(description="attributed questions whose evidence names no image (never "
                                                    "'opened')")
    retrieval_miss: EvidenceCell = Field(description="no hit in an evidence session, no evidence image opened")
    retrieved_not_opened: EvidenceCell = Field(description="a hit in an evidence session, no evidence image opened")
    opened_not_retrieved: EvidenceCell = Field(description="an evidence image opened with no hit in its session")
    retrieved_and_opened: EvidenceCell = Field(description="a hit in an evidence session and an evidence image "
                                                           "opened")
    opened_answered_wrong: int = Field(description="wrong answers although an evidence image was opened")


class SummaryFile(RecordBase):
    simulated: bool
    state: RunState
    users: int
    expected: int
    answered: int
    judged: int
    scored: int
    overall: Score
    by_language: dict[str, Score]
    by_difficulty: dict[str, Score]
    official: OfficialAccounting | None = Field(default=None, description=(
        "SECONDARY figure, not the headline (`overall`, `by_language`, `by_difficulty` are): the official "
        "MobileMem evaluator's accounting, with every expected (selected) question in the denominator and "
        "every question that is not scored (a gap of any stage, not_run, damaged) counted as not correct "
        "(label 0, F1 0, BLEU-1 0); overall and by language and difficulty. Null in older summaries"))
    gaps: dict[str, dict[str, int]] = Field(description="stage -> reason -> count")
    usage: UsageSummary
    cleanup_error_count: int
    not_attempted: int = Field(default=0, description="selected questions with no outcome at all (status not_run)")
    evidence: EvidenceSummary | None = Field(default=None, description="the evidence attribution split (null in "
                                                                          "older summaries)")
    damaged: list[str] = Field(default_factory=list, description="files of the run that could not be trusted "
                               "(a link, unreadable, truncated or not valid), one line each, run-relative; "
                               "each costs only its own item")

    @property
    def gap_count(self) -> int:
        """Every technical gap, of every stage and reason."""
        return sum(n for reasons in self.gaps.values() for n in reasons.values())
