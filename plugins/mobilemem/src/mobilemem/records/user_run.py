"""The files of a user evaluated as a deployment run on a worker (`--workers`, DESIGN §12): where it
ran, and its progress, which is also its heartbeat. Both live in `users/<uid>/`, the only folder
such a run writes; the parent reads them."""

from __future__ import annotations

from pydantic import AwareDatetime, Field

from mobilemem.records.base import RecordBase


class HostFile(RecordBase):
    """host.json: the machine and process that evaluated the user."""

    user_id: int
    host: str
    pid: int
    worker: str | None = Field(description="the Prefect worker's name (PREFECT__WORKER_NAME), if a worker ran it")
    flow_run_id: str | None
    started_at: AwareDatetime
    git_commit: str | None
    package_versions: dict[str, str]


class UserProgressFile(RecordBase):
    """progress.json: the user's counters, rewritten every few seconds while its run is alive;
    `beat` grows with every write, so the parent tells a live run from a silent one by its own clock."""

    user_id: int
    beat: int = Field(ge=0)
    at: AwareDatetime
    ingested: int = 0
    failed_sessions: int = 0
    index: str = "waiting"
    answered: int = 0
    judged: int = 0
    gaps: int = 0
    finished: bool = False

    @classmethod
    def counters(cls) -> set[str]:
        """The fields that mirror the user's progress counters (lifecycle.dashboard.UserProgress)."""
        return set(cls.model_fields) - set(RecordBase.model_fields) - {"user_id", "beat", "at"}
