"""A question's files: job, answer, judgment, metrics, evidence attribution."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from mobilemem.records.base import FinishedReason, Label, DecidedBy, RecordBase, Timed
from mobilemem.records.failures import Failure, v1_failure
from mobilemem.records.retrieval import Retrieval
from mobilemem.records.usage import ObservedRequest, Usage, v1_requests


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
    refused_tool_calls: int = Field(default=0, description="calls past candidate.max_tool_calls: not run, "
                                                           "answered with a tool error")
    trajectory_path: str | None = None
    retrieval: Retrieval | None = Field(default=None, description="bm25-rag: what was retrieved and sent")
    failure: Failure | None = Field(default=None, description="what the candidate reports of its failure")
    details: dict[str, JsonValue] | None = Field(
        default=None, description="a plug-in's own account of its answer, in the shape its documentation gives "
                                  "(long-context: what of the history it sent and what it cut)")


class AnswerResponseFile(Timed):
    user_id: int
    question_id: str
    response: AnswerResponse | None = Field(description="null when the call raised")
    usage: Usage
    requests: list[ObservedRequest]
    latency_s: float
    failure: Failure | None = Field(default=None, description="the step's failure (its errors.jsonl line in error_id)")
    answer_fingerprint: str | None = Field(default=None, description="mobilemem.fingerprints: what produced it")

    @classmethod
    def _from_v1(cls, data: dict[str, Any]) -> dict[str, Any]:
        response, error_id = data.get("response"), data.pop("error_id", None)
        label = message = None
        if isinstance(response, dict):
            response = dict(response)
            label, message = response.pop("error_kind", None), response.pop("error", None)
            data["response"] = {**response, "failure": v1_failure(label, message, None)}
        failure = v1_failure(label, message, error_id, default="exception") if error_id else None
        return v1_requests({**data, "failure": failure})


class JudgmentFile(Timed):
    user_id: int
    question_id: str
    success: bool
    label: Label | None
    decided_by: DecidedBy | None
    raw_reply: str | None
    usage: Usage = Field(description="judge usage: never part of the run's totals")
    requests: list[ObservedRequest]
    failure: Failure | None = None
    judgment_fingerprint: str | None = Field(default=None, description="mobilemem_judge.fingerprint")

    @classmethod
    def _from_v1(cls, data: dict[str, Any]) -> dict[str, Any]:
        failure = v1_failure(data.pop("error_kind", None), data.pop("error", None), data.pop("error_id", None),
                             default="exception")
        return v1_requests({**data, "failure": failure})


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
    call: int = Field(description="index in the answer's tool_calls (bm25-rag: in its retrieval's images)")
    path: str = Field(description="workspace-relative (bm25-rag: the Image ID it was sent under)")
    session_id: str | None = Field(description="null when the path is not a saved dialogue image")
    turn: int | None
    image_id: str | None = Field(description="the turn's original Image ID (its dialogue path)")
    evidence: bool = Field(description="the same file as one of the question's evidence images")


class EvidenceHit(BaseModel):
    """One `bm25_search` hit that points into an evidence session."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    call: int = Field(description="index in the answer's tool_calls (bm25-rag: the chunk's rank)")
    path: str = Field(description="the hit's workspace path (bm25-rag: `chunk <id>`)")
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
