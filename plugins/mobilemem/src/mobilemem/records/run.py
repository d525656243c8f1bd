"""run.json and judge-settings.json."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, JsonValue, field_validator

from mobilemem.dataset_records import MAX_USER_ID, SafeId
from mobilemem.records.base import RunState, RecordBase
from mobilemem.records.config import Config
from mobilemem.records.dataset_manifest import RevisionStatus

UserId = Annotated[int, Field(ge=0, le=MAX_USER_ID)]  # ids name folders of the run: an edited run.json is refused


class PlannedQuestion(BaseModel):
    """A selected question as the run's plan lists it (run.json is never shown to the candidate)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    user_id: UserId
    question_id: SafeId
    language: str
    difficulty: str | None
    gold: str | list[str]


class CandidateProvenance(BaseModel):
    """Which ReMe produced the answers (DESIGN §4)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: str = Field(default="reme-image", description="candidate.kind: reme-image, a baseline (no-memory, "
                                                        "bm25-rag) or a plug-in, which use no ReMe preset or plugin")
    reme_version: str = Field(description="installed reme-ai")
    agentscope_version: str
    preset: str = Field(description="the ReMe application preset")
    plugin: str = Field(description="the ReMe plugin enabled by name")
    plugin_version: str = Field(description="the mobilemem distribution that ships the plugin")
    inject_runtime_state: bool
    plugin_package: str | None = Field(default=None, description="a candidate plug-in from outside mobilemem: "
                                                                  "its distribution, `name==version`")
    entry_point: str | None = Field(default=None, description="the candidate's entry point (`module:object`)")


class OmittedStep(BaseModel):
    """A step of one of ReMe's default jobs that the run's job of the same name does not run."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    job: str
    step: str = Field(description="the step's backend, as ReMe's default configuration names it")
    reason: str


class ReMeAppConfig(BaseModel):
    """The ReMe application configuration every user's application is opened with (DESIGN §4):
    ReMe's own resolution of its preset, the plugin's defaults and the runner's overrides."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    config: dict[str, JsonValue] = Field(description="ReMe's ApplicationConfig as it validated it, credentials "
                                                     "excluded, the user's workspace a placeholder")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="of `config` as canonical JSON (sorted keys, "
                                                               "no whitespace, UTF-8)")
    omitted_steps: list[OmittedStep] = Field(description="the steps of ReMe's default jobs the run's jobs of "
                                                         "the same names leave out, each with why")
    replaced_at_open: dict[str, str] = Field(default_factory=dict, description="config path -> what the runner "
                                             "puts in its place when it opens the application (the `as_llm` "
                                             "models: their names and parameters above are ReMe's, never sent)")


class ConfigFiles(BaseModel):
    """The files a run's configuration came from (DESIGN §6)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    defaults: str = Field(description="the defaults file: the checkout's config.yaml, or the packaged copy")
    defaults_from: Literal["checkout", "package"]
    config: str | None = Field(description="the --config file, null without one")


class RunRequest(BaseModel):
    """What the user asked for, built once from the command line or the flow's parameters (DESIGN §6):
    the flow's parameters by name, the paths as given. run.json's `args`; it round-trips
    (`model_validate(model_dump())`), and an older run.json's `args` dict reads as one."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    dataset: Path
    output: Path | None = Field(default=None, description="required by a run; `plan` may go without")
    model: str | None = None
    user_concurrency: int | None = None
    query_concurrency: int | None = None
    config: Path | None = Field(default=None, description="the --config file")
    users: tuple[int, ...] | None = Field(default=None, description="only these users (all without)")
    limit_questions: int | None = None
    simulate: bool = False
    reuse: tuple[Path, ...] = Field(default=(), description="earlier run directories, first wins")
    rejudge: Path | None = Field(default=None, description="the earlier run a rejudge run judges again")
    judge_model: str | None = None
    candidate: str | None = Field(default=None, description="candidate.kind, when asked for")
    workers: str | None = Field(default=None, description="a work pool: each user is a deployment run on it")
    endpoint_limit: int | None = None
    endpoint_key: str | None = None

    @field_validator("reuse", mode="before")
    @classmethod
    def _no_reuse(cls, value: object) -> object:
        return () if value is None else value  # the flow's parameter defaults to None


class RunFile(RecordBase):
    args: RunRequest
    config: Config = Field(description="the effective configuration (defaults < --config < flags), no secrets")
    config_files: ConfigFiles | None = Field(default=None, description="which defaults and --config files "
                                                                       "it came from")
    package_versions: dict[str, str]
    git_commit: str | None
    git_dirty: bool | None
    code_sha256: str | None = Field(default=None, description="the runner's own code as it ran: its Python "
                                    "modules and plugin files (lifecycle.provenance.code_digest); null in older runs")
    dataset_path: str
    dataset_revision: str | None
    dataset_revision_status: RevisionStatus = Field(default="declared", description=(
        "declared: the revision the runner pins, taken on trust; verified: the dataset folder's "
        "mobilemem-manifest.json (of that revision) listed every release file and preflight found each "
        "one as listed (mobilemem.dataset_manifest)"))
    data_sha256: str
    questions_sha256: str
    images_sha256: dict[str, str] = Field(default_factory=dict, description=(
        "per scheduled user (its id as a string), the sha256 of the sorted (path, sha256) pairs of its images "
        "(mobilemem.dataset_identity); empty in runs made before image hashes were recorded"))
    prompt_sha256: dict[str, str] = Field(description="sha256 of every frozen text the plugin adds")
    candidate: CandidateProvenance | None = None
    reme_app_config: ReMeAppConfig | None = Field(default=None, description=(
        "candidate kind reme-image: the ReMe application configuration of every user; null for other kinds "
        "and in runs made before it was recorded"))
    started_at: AwareDatetime
    finished_at: AwareDatetime | None = None
    flow_run_id: str | None = None
    pid: int | None = Field(default=None, description="the runner's process id")
    host: str | None = Field(default=None, description="the runner's host name")
    heartbeat_at: AwareDatetime | None = Field(default=None, description="updated while the run is alive")
    simulated: bool
    state: RunState
    users: list[UserId] = Field(default_factory=list, description="the scheduled users")
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
