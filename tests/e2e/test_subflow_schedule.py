"""A user's subflow run is created only when it can start (issue 24): with `--user-concurrency 1`, while
user 0 works (its first model request held by the simulator), exactly two user subflow runs exist (the
one working, one created ahead; three without the limit), at most two exist at any moment by the API's
own timestamps, and every user ends finished in the parent's users table."""

import asyncio
import json
import time
from uuid import UUID

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import FlowRun
from prefect.client.schemas.filters import (ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey, FlowRunFilter,
                                           FlowRunFilterParentFlowRunId)

from e2e.runs import run_cli, summary
from lifecycle.context import lookup
from lifecycle.dashboard import RunIdentity
from mobilemem.records import DEFAULT_KIND, RunFile
from mobilemem.rundir import RunDir, read_record

pytestmark = pytest.mark.slow
GUARD_S = 120.0


def _most_alive_at_once(spans: list[tuple[float, float]]) -> int:
    """The largest number of (created, ended) spans open at one instant."""
    return max(sum(start <= created < end for start, end in spans) for created, _ in spans)


def _subflows(parent_id: str) -> list[FlowRun]:
    with get_client(sync_client=True) as client:
        return client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[UUID(parent_id)])))


class _FirstRequestHeld:
    """Holds the run's first model request (user 0's) until every subflow run that the parent will
    create while user 0 works has been created: all three without a limit, or two with the third
    user waiting for a slot. Both are events; the count is read then."""

    def __init__(self, run: RunDir) -> None:
        self.run = run
        self.seen: int | None = None  # subflow runs that existed then (their names may come later)

    def __call__(self, _request) -> None:
        if self.seen is not None:
            return
        self.seen = 0
        slots = lookup(self.run.root).subflow_slots
        parent = read_record(self.run.run, RunFile).flow_run_id
        deadline = time.monotonic() + GUARD_S  # only against a hang: the events decide
        while time.monotonic() < deadline:
            created = len(_subflows(parent))
            if created == 3 or (created == 2 and slots.locked()):
                self.seen = created
                return
            time.sleep(0.05)
        self.seen = -1  # neither event came


def test_a_user_subflow_is_created_only_when_it_can_start(monkeypatch, simulator, sample_root, tmp_path):
    held = _FirstRequestHeld(RunDir.for_output(tmp_path, "qwen3.8-max", DEFAULT_KIND))
    simulator.on_started = held
    try:
        code, run = run_cli(monkeypatch, simulator, sample_root, tmp_path, "--user-concurrency", "1",
                            "--limit-questions", "1")
    finally:
        simulator.reset()
    assert held.seen == 2  # the one working and the one created ahead (3 without the limit)
    assert code == 0 and summary(run).scored == 3
    manifest = read_record(run.run, RunFile)
    subflows = _subflows(manifest.flow_run_id)
    assert sorted(f.name for f in subflows) == ["user-0", "user-1", "user-2"]
    assert _most_alive_at_once([(f.created.timestamp(), f.end_time.timestamp()) for f in subflows]) <= 2

    async def read():
        async with get_client() as client:
            return await client.read_artifacts(artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=[RunIdentity.of(manifest).key("users")])))

    [users] = asyncio.run(read())
    assert [row["status"] for row in json.loads(users.data)] == ["finished"] * 3


def test_by_default_no_task_artifacts_and_the_tables_are_still_there(monkeypatch, simulator, sample_root, tmp_path):
    code, run = run_cli(monkeypatch, simulator, sample_root, tmp_path / "out", "--users", "0",
                        "--limit-questions", "1")
    assert code == 0 and summary(run).scored == 1
    manifest = read_record(run.run, RunFile)
    assert manifest.config.dashboard.task_artifacts is False

    async def read():
        async with get_client() as client:
            [user] = await client.read_flow_runs(flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[UUID(manifest.flow_run_id)])))
            return await client.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[user.id])))

    artifacts = asyncio.run(read())
    assert [a.key for a in artifacts] == [RunIdentity.of(manifest).key("user-0")]  # its table, no task artifact
