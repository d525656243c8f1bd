"""What the Prefect dashboard shows of a run where every stage fails once (the shared `faulty_run`),
read back from the Prefect API the UI reads: task-run states, progress tables, flow-run logs,
run-scoped artifact keys and the task artifacts that link the run-directory files."""

import asyncio
import json
import re
from uuid import UUID

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    FlowRunFilter,
    FlowRunFilterId,
    FlowRunFilterParentFlowRunId,
    LogFilter,
    LogFilterFlowRunId,
)
from prefect.client.schemas.objects import StateType

from mobilemem.records import RunFile
from mobilemem.rundir import read_record

pytestmark = pytest.mark.slow


async def _wait_for(read, ready, timeout_s: float = 60.0):
    """Task-run states and logs reach the server as events and batches: poll until they are there."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        value = await read()
        if ready(value) or asyncio.get_running_loop().time() > deadline:
            return value
        await asyncio.sleep(0.5)


@pytest.fixture(scope="module")
def dashboard(faulty_run):
    """(run, the parent flow run, its user subflows by name, task runs by name, artifacts by key)."""
    _, run, _, answer_q, judge_q = faulty_run
    parent_id = UUID(read_record(run.run, RunFile).flow_run_id)
    # every task run and log line a test below reads: the server records them from batched events
    expected = {"ingest-1_1", "ingest-1_2", "index-user-2", f"answer-{answer_q.question_id}",
                f"judge-{judge_q.question_id}", "judge-0_q_1", "finalize",
                *(f"skip-{u}_q_{n}" for u in (1, 2) for n in (1, 2, 3))}
    finished = "user 1: sessions 1/4 (1 failed), index skipped, answered 0/3, judged 0/3, gaps 3 - finished"

    async def read():
        async with get_client() as client:
            parent = await client.read_flow_run(parent_id)
            subflows = await client.read_flow_runs(flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[parent_id])))
            ids = [parent_id, *(f.id for f in subflows)]

            async def tasks():
                return await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)))

            task_runs = await _wait_for(tasks, lambda runs: expected <= {t.name for t in runs if t.state
                                                                          and t.state.is_final()})
            artifacts = await client.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=ids)))

            async def logs():
                return await client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[parent_id])))

            logs = await _wait_for(logs, lambda entries: finished in {entry.message for entry in entries})
        return parent, {f.name: f for f in subflows}, {t.name: t for t in task_runs}, artifacts, logs

    return run, *asyncio.run(read())


def test_each_failed_step_is_a_failed_task_run_with_its_reason(dashboard, faulty_run):
    _, _, _, answer_q, judge_q = faulty_run
    _, _, _, tasks, _, _ = dashboard
    failed = {name: t.state for name, t in tasks.items() if t.state.type == StateType.FAILED}
    assert set(failed) == {"ingest-1_2", "index-user-2", f"answer-{answer_q.question_id}",
                           f"judge-{judge_q.question_id}"}
    assert failed["ingest-1_2"].message.startswith("HTTP 500")
    assert "disk full" in failed["index-user-2"].message
    assert failed[f"answer-{answer_q.question_id}"].message.startswith("HTTP 401")
    assert all("\n" not in s.message and "sk-PLANTED" not in s.message for s in failed.values())
    assert tasks["ingest-1_1"].state.type == StateType.COMPLETED and tasks["finalize"].state.is_completed()


def test_a_question_blocked_by_its_history_or_index_is_a_task_run_named_for_the_gap(dashboard):
    _, _, _, tasks, _, _ = dashboard
    skipped = {name: t.state for name, t in tasks.items() if name.startswith("skip-")}
    assert set(skipped) == {f"skip-{u}_q_{n}" for u in (1, 2) for n in (1, 2, 3)}
    assert {s.type for s in skipped.values()} == {StateType.CANCELLED}
    assert skipped["skip-1_q_2"].name == "History gap" and "ingest failed: HTTP 500" in skipped["skip-1_q_2"].message
    assert skipped["skip-2_q_3"].name == "Index gap"
    assert not [n for n in tasks if n.startswith(("answer-1_", "answer-2_", "index-user-1"))]


def test_the_user_subflows_and_the_parent_still_complete_and_are_named(dashboard):
    run, parent, subflows, _, _, _ = dashboard
    assert parent.state.is_completed() and sorted(subflows) == ["user-0", "user-1", "user-2"]
    assert all(f.state.is_completed() for f in subflows.values())
    assert re.fullmatch(r"qwen3\.8-max-\d{8}-\d{4}", parent.name)


def _tables(artifacts, run) -> dict[str, list[dict]]:
    return {a.key: json.loads(a.data) for a in artifacts if a.type == "table" and a.key}


def test_progress_tables_have_the_right_counts_and_run_scoped_keys(dashboard):
    run, parent, subflows, _, artifacts, _ = dashboard
    prefix = f"mobilemem-qwen3-8-max-{str(parent.id)[:8]}-"
    keyed = [a for a in artifacts if a.key]
    assert keyed and all(a.key.startswith(prefix) and str(parent.id) in a.description for a in keyed)
    tables = _tables(artifacts, run)
    [user1] = tables[prefix + "user-1"]
    assert (user1["sessions ingested"], user1["sessions failed"], user1["index"]) == ("1/4", 1, "skipped")
    assert (user1["answered"], user1["judged"], user1["gaps"], user1["status"]) == ("0/3", "0/3", 3, "finished")
    [user2] = tables[prefix + "user-2"]
    assert (user2["sessions ingested"], user2["index"], user2["gaps"]) == ("4/4", "failed", 3)
    [user0] = tables[prefix + "user-0"]
    assert (user0["index"], user0["answered"], user0["judged"], user0["gaps"]) == ("built", "2/3", "1/3", 2)
    by_user = {row["user"]: row for row in tables[prefix + "users"]}
    assert by_user == {0: user0, 1: user1, 2: user2}
    user_artifacts = {a.key: a.flow_run_id for a in keyed if "-user-" in a.key}
    assert user_artifacts[prefix + "user-1"] == subflows["user-1"].id  # on the user's own subflow


def test_the_progress_lines_are_in_the_runs_log(dashboard):
    _, _, _, _, _, logs = dashboard
    lines = [entry.message for entry in logs if entry.name == "mobilemem.progress"]
    assert "user 1: sessions 1/4 (1 failed), index skipped, answered 0/3, judged 0/3, gaps 3 - finished" in lines
    assert any(re.match(r"user 0: sessions 4/4, index built, answered", line) for line in lines)
    assert any(line.startswith("user 2: sessions 4/4, index failed") for line in lines)


def test_task_artifacts_link_the_files_each_task_wrote_and_the_final_one_lists_the_run_directory(dashboard):
    run, parent, _, tasks, artifacts, _ = dashboard
    by_task = {a.task_run_id: a for a in artifacts if a.task_run_id}
    ingest = by_task[tasks["ingest-1_1"].id]
    assert ingest.type == "markdown" and run.user(1).session("1_1").resolve().as_uri() in ingest.data
    judged = by_task[tasks["judge-0_q_1"].id].data
    assert all(name in judged for name in ("job.json", "answer-response.json", "judgment.json", "metrics.json"))
    [final] = [a for a in artifacts if a.key == f"mobilemem-qwen3-8-max-{str(parent.id)[:8]}-run"]
    for entry in run.root.iterdir():
        assert f"`{entry.name}" in final.data
    assert "judge-settings.json" in final.data and "cleanup-errors.jsonl" in final.data
