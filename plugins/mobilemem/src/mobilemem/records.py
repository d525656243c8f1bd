"""Every file of the run directory (DESIGN §5), one pydantic model each.

A model is named for its file (`answer-response.json` -> `AnswerResponseFile`, a JSONL line ->
`...Line`). All are frozen, refuse unknown fields and carry `schema_version`; bump it when a field is
renamed, removed or changes meaning, and upgrade older shapes in a `mode="before"` validator.
Run timestamps are UTC; dataset times stay the verbatim naive strings of the dataset. Unknown is
`null`, never 0. No model has a field for credentials.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, JsonValue

SCHEMA_VERSION = 1

ErrorStage = Literal["ingest", "index", "answer", "judge", "run", "cleanup"]
GapStage = Literal["history", "index", "answer", "judge"]
RunState = Literal["running", "completed", "interrupted", "interrupted_by_error"]
FinishedReason = Literal["completed", "exceed_max_iters", "interrupted"]
Label = Literal["CORRECT", "WRONG"]
DecidedBy = Literal["json", "embedded_json", "words"]  # which parsing step of the judge reply decided


class RecordBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: Literal[1] = SCHEMA_VERSION


class Timed(RecordBase):
    started_at: AwareDatetime
    finished_at: AwareDatetime


# --- errors.jsonl, cleanup-errors.jsonl, error.json ---------------------------------------------


class StackFrame(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    file: str
    line: int
    function: str


class ErrorLine(RecordBase):
    """One technical error event; `id` is what error.json points at."""

    id: str
    time: AwareDatetime
    stage: ErrorStage
    user_id: int | None = None
    session_id: str | None = None
    question_id: str | None = None
    image_paths: list[str] = Field(default_factory=list, description="dataset-relative")
    error_type: str
    reason: str = Field(description="sanitized: no credentials, headers or payloads")
    frames: list[StackFrame] = Field(default_factory=list)


class ErrorFile(RecordBase):
    """Why a selected question has no score."""

    user_id: int
    question_id: str
    stage: GapStage
    reason: str = Field(description="a short category: 'HTTP 500', 'timeout', 'interrupted', ...")
    detail: str | None = Field(default=None, description="sanitized")
    error_id: str | None = Field(description="id of the errors.jsonl line that caused the gap")


# --- usage (policy version 2, DESIGN §7.1) -------------------------------------------------------


class ObservedRequest(BaseModel):
    """One HTTP exchange of a model role, as seen by the usage recorder."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    started_at: AwareDatetime
    finished_at: AwareDatetime
    status: int | None = Field(description="HTTP status; null when no response arrived")
    success: bool = Field(description="2xx and the body was read completely")
    streamed: bool
    compression: bool = False
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    error: str | None = None
    failure: str | None = Field(default=None, description="category of a failed request: 'HTTP 500', 'timeout', "
                                                          "'cancelled', ...")
    frames: list[StackFrame] = Field(default_factory=list, description="a failed request only: the runner code "
                                                                       "that made it (repository-relative)")


class UsageCounter(BaseModel):
    """A token counter: `value` is null when no observed response reported it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    value: int | None = None
    reported_by: int = 0
    observed: int = 0


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    policy_version: Literal[2] = 2
    requests: int = 0
    successful_requests: int = 0
    prompt_tokens: UsageCounter = UsageCounter()
    completion_tokens: UsageCounter = UsageCounter()
    total_tokens: UsageCounter = UsageCounter()
    reasoning_tokens: UsageCounter = UsageCounter()
    cached_tokens: UsageCounter = UsageCounter()
    tokens: UsageCounter = Field(default=UsageCounter(), description="total, or prompt + completion")


# --- run.json, judge-settings.json ---------------------------------------------------------------


class PlannedQuestion(BaseModel):
    """A selected question as the run's plan lists it (run.json is never shown to the candidate)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    user_id: int
    question_id: str
    language: str
    difficulty: str | None
    gold: str | list[str]


class CandidateProvenance(BaseModel):
    """Which ReMe produced the answers (DESIGN §4)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    reme_version: str = Field(description="installed reme-ai")
    agentscope_version: str
    preset: str = Field(description="the ReMe application preset")
    plugin: str = Field(description="the ReMe plugin enabled by name")
    plugin_version: str = Field(description="the mobilemem distribution that ships the plugin")
    inject_runtime_state: bool


class ConfigFiles(BaseModel):
    """The files a run's configuration came from (DESIGN §6)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    defaults: str = Field(description="the defaults file: the checkout's config.yaml, or the packaged copy")
    defaults_from: Literal["checkout", "package"]
    config: str | None = Field(description="the --config file, null without one")


class RunFile(RecordBase):
    args: dict[str, JsonValue]
    config: dict[str, JsonValue] = Field(description="effective configuration, no secrets")
    config_files: ConfigFiles | None = Field(default=None, description="which defaults and --config files "
                                                                       "it came from")
    package_versions: dict[str, str]
    git_commit: str | None
    git_dirty: bool | None
    dataset_path: str
    dataset_revision: str | None
    data_sha256: str
    questions_sha256: str
    prompt_sha256: dict[str, str] = Field(description="sha256 of every frozen text the plugin adds")
    candidate: CandidateProvenance | None = None
    started_at: AwareDatetime
    finished_at: AwareDatetime | None = None
    flow_run_id: str | None = None
    pid: int | None = Field(default=None, description="the runner's process id")
    host: str | None = Field(default=None, description="the runner's host name")
    heartbeat_at: AwareDatetime | None = Field(default=None, description="updated while the run is alive")
    simulated: bool
    state: RunState
    users: list[int] = Field(default_factory=list, description="the scheduled users")
    questions: list[PlannedQuestion] = Field(default_factory=list, description="the selected questions")


class JudgeSettingsFile(RecordBase):
    model: str
    model_from_env: bool = Field(description="JUDGE_MODEL_NAME set the model")
    temperature: float
    extra_body: dict[str, JsonValue]
    max_tokens: int
    stream: bool
    rubric: str
    rubric_sha256: str
    protocol: str
    parser_version: int
    timeout_s: float | None = Field(default=None, description="wall-clock budget of one judgment")
    max_reply_bytes: int | None = Field(default=None, description="a longer reply is a judge gap")


# --- per user ------------------------------------------------------------------------------------


class SessionFile(Timed):
    user_id: int
    session_id: str
    success: bool
    notes_written: list[str] = Field(default_factory=list, description="the note ReMe reports (workspace-relative)")
    answer: str | None = Field(default=None, description="ReMe's auto_memory answer: the agent's last text, or "
                                                           "its error message when the job failed")
    trajectory_path: str | None = Field(default=None, description="the memory agent's native state "
                                                                   "(workspace-relative)")
    finished_reason: FinishedReason | None = None
    usage: Usage
    requests: list[ObservedRequest]
    error_kind: str | None = None
    error_id: str | None = None
    error: str | None = None


class IndexResponseFile(Timed):
    user_id: int
    success: bool
    documents: int = Field(default=0, description="files in ReMe's keyword index")
    chunks: int = Field(default=0, description="chunks in ReMe's keyword index")
    build_seconds: float | None = None
    error_id: str | None = None
    error: str | None = None


class MemoryUsageFile(RecordBase):
    user_id: int
    sessions: int
    usage: Usage
    memory_fingerprint: str | None = Field(default=None, description="mobilemem.fingerprints: what built it")


class ReusedItem(BaseModel):
    """Where a copied item came from (issue 14): the earlier run and the item's fingerprint."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    run_dir: str
    run_id: str | None = Field(description="the earlier run's parent flow-run id")
    fingerprint: str


class ReuseFile(RecordBase):
    """users/<uid>/reuse.json: what of this user was copied from an earlier run (`--reuse`); absent
    when nothing was. Copied files keep their bytes; their usage is not this run's."""

    user_id: int
    memory: ReusedItem | None = None
    answers: dict[str, ReusedItem] = Field(default_factory=dict)
    judgments: dict[str, ReusedItem] = Field(default_factory=dict)


class LabelFlip(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    question_id: str
    before: Label
    after: Label


class RejudgeFile(RecordBase):
    """rejudge.json of a `rejudge` run: its judgments against the earlier run's, question by question."""

    earlier_run: str
    earlier_run_id: str | None
    judge_model_before: str
    judge_model_after: str
    compared: int = Field(description="questions judged in both runs")
    accuracy_before: float | None = Field(description="over the compared questions")
    accuracy_after: float | None
    flips: list[LabelFlip]


class ComparedRun(BaseModel):
    """One side of a `compare`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    run_dir: str
    run_id: str | None = Field(description="the run's parent flow-run id")
    model: str | None = Field(description="the candidate model (run.json config)")
    started_at: AwareDatetime
    scored: int = Field(description="questions scored in this run")
    scored_only_here: int = Field(description="scored in this run but not in the other")


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


# --- per question --------------------------------------------------------------------------------


class JobFile(RecordBase):
    """Exactly what the candidate saw of a question."""

    user_id: int
    question_id: str
    question: str


class ToolCallRecord(BaseModel):
    """One tool call of the answer agent, noted as it happened (in order)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    ok: bool
    error: str | None = None
    arguments: dict[str, JsonValue] | None = Field(default=None, description="what the model passed (null in "
                                                                               "older runs)")
    result: str | None = Field(default=None, description="the text the tool returned, at most MAX_TOOL_RESULT "
                                                         "characters (an image's bytes are not text)")
    result_chars: int | None = Field(default=None, description="the returned text's full length")


class AnswerResponse(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    success: bool
    answer: str | None
    finished_reason: FinishedReason | None
    truncated: bool = False
    answer_bytes: int | None = Field(default=None, description="the answer's size before it was cut to the cap")
    iterations: int = 0
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    trajectory_path: str | None = None
    error_kind: str | None = None
    error: str | None = None


class AnswerResponseFile(Timed):
    user_id: int
    question_id: str
    response: AnswerResponse | None = Field(description="null when the call raised")
    usage: Usage
    requests: list[ObservedRequest]
    latency_s: float
    error_id: str | None = None
    answer_fingerprint: str | None = Field(default=None, description="mobilemem.fingerprints: what produced it")


class JudgmentFile(Timed):
    user_id: int
    question_id: str
    success: bool
    label: Label | None
    decided_by: DecidedBy | None
    raw_reply: str | None
    usage: Usage = Field(description="judge usage: never part of the run's totals")
    requests: list[ObservedRequest]
    error_kind: str | None = None
    error_id: str | None = None
    error: str | None = None
    judgment_fingerprint: str | None = Field(default=None, description="mobilemem_judge.fingerprint")


class MetricsFile(RecordBase):
    user_id: int
    question_id: str
    llm_judge: Literal[0, 1]
    f1: float
    bleu1: float
    reference: str = Field(description="the reference the scores were computed against")


HitRule = Literal["dialog", "note", "image"]  # how a search hit points into a session (analysis.attribution)


class ImageRead(BaseModel):
    """One successful `read_image` call, mapped back to the dialogue turn whose image ReMe saved."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    call: int = Field(description="index in the answer's tool_calls")
    path: str = Field(description="workspace-relative")
    session_id: str | None = Field(description="null when the path is not a saved dialogue image")
    turn: int | None
    image_id: str | None = Field(description="the turn's original Image ID (its dialogue path)")
    evidence: bool = Field(description="the same file as one of the question's evidence images")


class EvidenceHit(BaseModel):
    """One `bm25_search` hit that points into an evidence session."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    call: int = Field(description="index in the answer's tool_calls")
    path: str = Field(description="the hit's workspace path")
    lines: str = Field(description="the hit's line range, as the search printed it")
    sessions: list[str] = Field(description="the evidence sessions it points into")
    rules: list[HitRule] = Field(description="dialog: the session's transcript; note: a note the session wrote; "
                                             "image: its text cites session/images/<sid>/")


class AttributionFile(RecordBase):
    """What the answer agent did with a scored question's evidence (issue 15): never seen by the candidate."""

    user_id: int
    question_id: str
    evidence_sessions: list[str]
    evidence_images: list[str] = Field(description="the evidence's image_path values, as in questions.jsonl")
    images_read: list[ImageRead]
    evidence_hits: list[EvidenceHit]
    opened_evidence_image: bool
    retrieved_evidence_session: bool
    label: Label


# --- run-level results ---------------------------------------------------------------------------


class ResultLine(RecordBase):
    user_id: int
    question_id: str
    language: str
    difficulty: str | None
    status: Literal["scored", "history", "index", "answer", "judge", "not_run"]
    prediction: str | None
    gold: str | list[str]
    label: Label | None
    f1: float | None
    bleu1: float | None
    answer_tokens: int | None
    answer_latency_s: float | None


class Score(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    expected: int
    scored: int
    accuracy: float | None
    f1: float | None
    bleu1: float | None


class MeanTokens(BaseModel):
    """A mean with its parts. An unknown count is never averaged in as 0: `value` = `tokens` / `known`,
    over the `known` units (of `denominator`) whose token count is known; it is the mean over the
    whole denominator exactly when `known == denominator`, and null when no unit's count is known."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    value: float | None
    tokens: int | None = Field(description="the sum over the units whose count is known")
    denominator: int
    known: int | None = Field(default=None, description="units whose count is known: every successful request "
                                                        "of it reported usage (null in older summaries)")
    attempted: int
    completed: int
    reused: int = Field(default=0, description="units copied from an earlier run (`--reuse`): not in this mean")


class ReusedSummary(BaseModel):
    """What this run copied from earlier runs, and what it cost there (never counted again here)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    users: int = 0  # memories copied
    sessions: int = 0
    answers: int = 0
    judgments: int = 0
    memory: Usage | None = Field(default=None, description="the copied sessions' usage, in the earlier run")
    answer: Usage | None = Field(default=None, description="the copied answers' usage, in the earlier run")


class UsageSummary(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    policy_version: Literal[2] = 2
    memory: Usage = Field(description="from sessions/*.json made in this run (the index makes no request)")
    answer: Usage = Field(description="from answer-response.json made in this run")
    mean_tokens_per_user: MeanTokens = Field(description="(memory + answer tokens) / scheduled users not reused")
    mean_tokens_per_question: MeanTokens = Field(description="answer tokens / expected questions not reused")
    reused: ReusedSummary = Field(default_factory=ReusedSummary)


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
    gaps: dict[str, dict[str, int]] = Field(description="stage -> reason -> count")
    usage: UsageSummary
    cleanup_error_count: int
    not_attempted: int = Field(default=0, description="selected questions with no outcome at all (status not_run)")
    evidence: EvidenceSummary | None = Field(default=None, description="the evidence attribution split (null in "
                                                                          "older summaries)")
