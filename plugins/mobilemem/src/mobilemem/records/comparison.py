"""rejudge.json and compare-*.json: one run's labels and scores against another's."""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from mobilemem.records.base import Label, RecordBase


class LabelFlip(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    question_id: str
    before: Label
    after: Label


class RejudgeFile(RecordBase):
    """rejudge.json of a `rejudge` run: its judgments against the earlier run's, question by question."""

    earlier_run: str
    earlier_run_id: str | None
    judge_model_before: str | None = Field(description="null when the earlier run has no readable "
                                                         "judge-settings.json")
    judge_model_after: str | None
    compared: int = Field(description="questions judged in both runs")
    accuracy_before: float | None = Field(description="over the compared questions")
    accuracy_after: float | None
    flips: list[LabelFlip]
    damaged: list[str] = Field(default_factory=list, description="judgments (or judge settings) of either run "
                               "that could not be trusted and were left out, one line each")


class ComparedRun(BaseModel):
    """One side of a `compare`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    run_dir: str
    run_id: str | None = Field(description="the run's parent flow-run id")
    model: str | None = Field(description="the candidate model (run.json config)")
    started_at: AwareDatetime
    scored: int = Field(description="questions scored in this run")
    scored_only_here: int = Field(description="scored in this run but not in the other")
    damaged: list[str] = Field(default_factory=list, description="lines or files of this run that could not be "
                               "trusted and were left out (run-relative), one line each")


class PairedScore(BaseModel):
    """A score of both runs over the same questions; `difference` = B - A."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    a: float | None
    b: float | None
    difference: float | None
    low: float | None = Field(description="95% paired bootstrap interval of the difference; null with fewer "
                                           "than two questions")
    high: float | None


class McNemarCounts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    both_correct: int
    neither_correct: int
    only_a_correct: int
    only_b_correct: int
    p_value: float | None = Field(description="exact McNemar test; null when no label flipped")


class PairedGroup(BaseModel):
    """The questions scored in both runs, overall or of one language or difficulty."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    compared: int
    accuracy: PairedScore
    mcnemar: McNemarCounts
    f1: PairedScore
    bleu1: PairedScore


class QuestionFlip(BaseModel):
    """A question correct in one run and wrong in the other."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    user_id: int
    question_id: str
    question: str | None = Field(description="from job.json; null when neither run has it")
    language: str
    difficulty: str | None
    gold: str | list[str]
    prediction_a: str | None
    prediction_b: str | None
    label_a: Label
    label_b: Label


class CompareFile(RecordBase):
    """compare-<name>.json: run B against run A on the questions scored in both (B - A)."""

    run_a: ComparedRun
    run_b: ComparedRun
    data_sha256: str
    questions_sha256: str
    confidence: float
    resamples: int
    seed: int
    overall: PairedGroup
    by_language: dict[str, PairedGroup]
    by_difficulty: dict[str, PairedGroup]
    correct_only_in_a: list[QuestionFlip] = Field(description="correct in A, wrong in B")
    correct_only_in_b: list[QuestionFlip] = Field(description="wrong in A, correct in B")
