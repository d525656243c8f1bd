"""The configuration's schema (config.yaml, and run.json's effective `config`); `mobilemem.config`
loads and merges the files. No field holds a credential."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

# the name of an installed candidate plug-in (entry-point group `mobilemem.candidates`, DESIGN §10): the
# built-ins are reme-image, no-memory and bm25-rag; which are installed is checked when a run is planned,
# not here, so a run directory of a plug-in that is no longer installed still reads
CandidateKind = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$")]
DEFAULT_KIND = "reme-image"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class RequestPreset(_Section):
    """What every model role sends with each request."""

    temperature: float = Field(ge=0)
    extra_body: dict[str, JsonValue]
    stream: bool
    max_tokens: int = Field(gt=0)
    request_timeout_s: float = Field(gt=0)


class CandidatePreset(RequestPreset):
    kind: CandidateKind = DEFAULT_KIND  # what is evaluated: ReMe Image, a baseline, or any installed plug-in
    top_k: int = Field(default=5, gt=0)  # bm25-rag: transcript chunks retrieved per question
    chunk_turns: int = Field(default=8, gt=0)  # bm25-rag: dialogue turns per chunk (within one session)
    context_size: int = Field(gt=0)
    max_images: int = Field(gt=0)
    trigger_ratio: float = Field(gt=0, le=0.9)  # AgentScope keeps 10% for the compression itself
    reserve_ratio: float = Field(gt=0, lt=0.9)
    max_iters: int = Field(gt=0)
    # the tool calls one answer may run (30 iterations of a few parallel calls fit); past it, each
    # further call is refused as a tool error the agent sees
    max_tool_calls: int = Field(default=256, gt=0)
    answer_timeout_s: float = Field(gt=0)
    session_timeout_s: float = Field(gt=0)  # wall-clock budget of one session's ingest
    max_answer_bytes: int = Field(gt=0)  # a longer answer is recorded (and judged) cut to this size
    inject_runtime_state: bool  # ReMe's agent wrapper would send the wall-clock time (DESIGN §4.4)

    @model_validator(mode="after")
    def _reserve_below_trigger(self) -> CandidatePreset:
        if self.reserve_ratio >= self.trigger_ratio:
            raise ValueError("reserve_ratio must be smaller than trigger_ratio")
        return self


class JudgePreset(RequestPreset):
    model: str = Field(min_length=1)
    rubric: str = Field(min_length=1)
    timeout_s: float = Field(gt=0)  # wall-clock budget of one judgment
    max_reply_bytes: int = Field(gt=0)  # a longer judge reply is a judge gap


class DashboardPreset(_Section):
    task_artifacts: bool = False  # one artifact per task run linking the run-directory files it wrote


class PricesPreset(_Section):
    """`plan`'s estimate in money: prices per million tokens, in any one currency; null = no money
    estimate. The judge's, when null, are the candidate model's. Each pair is set whole or not at
    all (`plan` refuses half a pair: cli.plan_cost)."""

    input_per_mtok: float | None = Field(default=None, ge=0)
    output_per_mtok: float | None = Field(default=None, ge=0)
    judge_input_per_mtok: float | None = Field(default=None, ge=0)
    judge_output_per_mtok: float | None = Field(default=None, ge=0)


class Config(_Section):
    model: str = Field(min_length=1)
    user_concurrency: int = Field(gt=0)
    query_concurrency: int = Field(gt=0)
    judge_concurrency: int = Field(gt=0)
    min_free_disk_mb: int = Field(ge=0)  # below this, the run starts no new work (DESIGN §8)
    image_cache: bool = True  # preflight takes the verified-image cache's result for an unchanged file
    # --workers (DESIGN §12): a user run whose heartbeat is silent this long is cancelled, its questions gaps
    user_heartbeat_timeout_s: float = Field(default=120.0, gt=0)
    # --endpoint-limit: model requests in flight at one endpoint, across every evaluation on the Prefect server
    endpoint_limit: int | None = Field(default=None, gt=0)
    # --endpoint-key: the endpoint limit's name (default: each role's base URL, so equal URLs share one)
    endpoint_name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    candidate: CandidatePreset
    judge: JudgePreset
    dashboard: DashboardPreset = Field(default_factory=DashboardPreset)
    prices: PricesPreset = Field(default_factory=PricesPreset)  # `plan`: the estimate in money
