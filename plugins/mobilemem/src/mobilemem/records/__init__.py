"""Every file of the run directory (DESIGN §5), one pydantic model each, in the modules of this
package by concern and all importable from here.

A model is named for its file (`answer-response.json` -> `AnswerResponseFile`, a JSONL line ->
`...Line`). All are frozen, refuse unknown fields and carry `schema_version`; bump it when a field is
renamed, removed or changes meaning, and upgrade older shapes in a `mode="before"` validator.
Run timestamps are UTC; dataset times stay the verbatim naive strings of the dataset. Unknown is
`null`, never 0. No model has a field for credentials.
"""

from mobilemem.records.base import (
    SCHEMA_VERSION,
    ErrorStage,
    GapStage,
    RunState,
    FinishedReason,
    Label,
    DecidedBy,
    RecordBase,
    Timed,
)
from mobilemem.records.config import (
    DEFAULT_KIND,
    CandidateKind,
    RequestPreset,
    CandidatePreset,
    JudgePreset,
    DashboardPreset,
    PricesPreset,
    Config,
)
from mobilemem.records.failures import (
    Failure,
    StackFrame,
    ErrorLine,
    ErrorFile,
)
from mobilemem.records.usage import (
    ObservedRequest,
    UsageCounter,
    Usage,
)
from mobilemem.records.run import (
    PlannedQuestion,
    CandidateProvenance,
    OmittedStep,
    ReMeAppConfig,
    ConfigFiles,
    RunRequest,
    RunFile,
    JudgeSettingsFile,
)
from mobilemem.records.dataset_manifest import (
    RevisionStatus,
    DatasetFileEntry,
    DatasetManifestFile,
)
from mobilemem.records.user import (
    SessionFile,
    IndexResponseFile,
    ManifestEntry,
    MemoryUsageFile,
    ReusedItem,
    ReuseFile,
)
from mobilemem.records.user_run import (
    HostFile,
    UserProgressFile,
)
from mobilemem.records.comparison import (
    LabelFlip,
    RejudgeFile,
    ComparedRun,
    PairedScore,
    McNemarCounts,
    PairedGroup,
    QuestionFlip,
    CompareFile,
)
from mobilemem.records.retrieval import (
    ChunkImage,
    Retrieval,
    RetrievedChunk,
    SentImage,
    TranscriptChunkLine,
)
from mobilemem.records.question import (
    JobFile,
    ToolCallRecord,
    AnswerResponse,
    AnswerResponseFile,
    JudgmentFile,
    MetricsFile,
    HitRule,
    ImageRead,
    EvidenceHit,
    AttributionFile,
)
from mobilemem.records.cache import (
    CachedFile,
    CachedImage,
    ImageCacheFile,
)
from mobilemem.records.results import (
    ResultLine,
    Score,
    OfficialScore,
    OfficialAccounting,
    MeanTokens,
    ReusedSummary,
    UsageSummary,
    UserUsage,
    EvidenceCell,
    EvidenceSummary,
    SummaryFile,
)

__all__ = [
    "DEFAULT_KIND",
    "CandidateKind",
    "RequestPreset",
    "CandidatePreset",
    "JudgePreset",
    "DashboardPreset",
    "PricesPreset",
    "Config",
    "ChunkImage",
    "Retrieval",
    "RetrievedChunk",
    "SentImage",
    "TranscriptChunkLine",
    "AnswerResponse",
    "AnswerResponseFile",
    "AttributionFile",
    "CachedFile",
    "CachedImage",
    "CandidateProvenance",
    "CompareFile",
    "ComparedRun",
    "ConfigFiles",
    "DatasetFileEntry",
    "DatasetManifestFile",
    "DecidedBy",
    "ErrorFile",
    "ErrorLine",
    "ErrorStage",
    "Failure",
    "EvidenceCell",
    "EvidenceHit",
    "EvidenceSummary",
    "FinishedReason",
    "GapStage",
    "HitRule",
    "HostFile",
    "ImageCacheFile",
    "ImageRead",
    "IndexResponseFile",
    "JobFile",
    "JudgeSettingsFile",
    "JudgmentFile",
    "Label",
    "LabelFlip",
    "McNemarCounts",
    "MeanTokens",
    "ManifestEntry",
    "MemoryUsageFile",
    "MetricsFile",
    "ObservedRequest",
    "OfficialAccounting",
    "OfficialScore",
    "PairedGroup",
    "PairedScore",
    "PlannedQuestion",
    "QuestionFlip",
    "ReMeAppConfig",
    "OmittedStep",
    "RecordBase",
    "RejudgeFile",
    "ResultLine",
    "ReuseFile",
    "ReusedItem",
    "ReusedSummary",
    "RevisionStatus",
    "RunFile",
    "RunRequest",
    "RunState",
    "SCHEMA_VERSION",
    "Score",
    "SessionFile",
    "StackFrame",
    "SummaryFile",
    "Timed",
    "ToolCallRecord",
    "Usage",
    "UsageCounter",
    "UsageSummary",
    "UserProgressFile",
    "UserUsage",
]
