"""A user's subflow run is created only when it can start (issue 24): with `--user-concurrency 1`,
at most two user subflow runs exist at any moment (the one working, one created ahead), read back
from the Prefect API's own timestamps, and every user ends finished in the parent's users table."""

import asyncio
import json
from uuid import UUID

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey, FlowRunFilter,
                                           FlowRunFilterParentFlowRunId)

from e2e.runs import run_cli, summary
from lifecycle.dashboard import RunIdentity
from mobilemem.records import RunFile
from mobilemem.rundir import read_record

pytestmark = pytest.mark.slow


def _most_alive_at_once(spans: list[tuple[float, float]]) -> int:
    """The largest number of (created, ended) spans open at one instant."""
    return max(sum(start <= created < end for start, end in spans) for created, _ in spans)


def test_a_user_subflow_is_created_only_when_it_can_start(monkeypatch, simulator, sample_root, tmp_path):
    simulator.latency_s = 0.3  # a user lasts seconds: without the limit, all three subflow runs would overlap
    try:
        code, run = run_cli(monkeypatch, simulator, sample_root, tmp_path, "--user-concurrency", "1",
                            "--limit-questions", "1")
    finally:
        simulator.reset()
    assert code == 0 and summary(run).scored == 3
    manifest = read_record(run.run, RunFile)

    async def read():
        async with get_client() as client:
            subflows = await client.read_flow_runs(flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[UUID(manifest.flow_run_id)])))
            users = await client.read_artifacts(artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=[RunIdentity.of(manifest).key("users")])))
        return subflows, users

    subflows, [users] = asyncio.run(read())
    assert sorted(f.name for f in subflows) == ["user-0", "user-1", "user-2"]
    spans = [(f.created.timestamp(), f.end_time.timestamp()) for f in subflows]
    assert _most_alive_at_once(spans) <= 2  # the one working and the one created ahead (3 without the limit)
    assert [row["status"] for row in json.loads(users.data)] == ["finished"] * 3



def test_without_task_artifacts_the_tables_are_still_there(monkeypatch, simulator, sample_root, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("dashboard:\n  task_artifacts: false\n", encoding="utf-8")
    code, run = run_cli(monkeypatch, simulator, sample_root, tmp_path / "out", "--users", "0",
                        "--limit-questions", "1", "--config", str(config))
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
