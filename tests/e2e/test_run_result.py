"""A run that scored nothing is not a success: exit 4 in one line, everything still recorded, and
the parent flow run ends Failed; any other run's flow run is Completed, named with its result."""

import asyncio
import socket

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import StateType

from e2e.runs import errors, run_cli, summary
from mobilemem.records import RunFile, RunRequest
from mobilemem.rundir import RunDir, read_record
from lifecycle import run_plan

pytestmark = pytest.mark.slow


def _flow_run_state(run: RunDir):
    async def read():
        async with get_client() as client:
            return (await client.read_flow_run(read_record(run.run, RunFile).flow_run_id)).state
    return asyncio.run(read())


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_nothing_scored_exits_4_and_the_flow_run_fails(sim, sample_root, tmp_path, monkeypatch, capsys):
    code, run = run_cli(monkeypatch, sim, sample_root, tmp_path / "out",
                        base_url=f"http://127.0.0.1:{_closed_port()}/v1")  # nothing listens there
    err = capsys.readouterr().err.splitlines()
    assert code == 4 and err[-1].startswith("mobilemem: no question was scored") and "(exit 4)" in err[-1]
    result = summary(run)
    assert (result.state, result.expected, result.scored) == ("completed", 9, 0)
    assert result.gaps == {"history": {"ingest failed: connection error": 9}}
    assert len([e for e in errors(run) if e.stage == "ingest"]) == 3  # each user's first session
    state = _flow_run_state(run)
    assert state.type == StateType.FAILED and state.name == "Failed: 0/9 scored, 9 gaps"


def test_a_run_that_scored_is_completed_named_with_its_result(baseline_run):
    code, run, _, _ = baseline_run
    assert code == 0
    state = _flow_run_state(run)
    assert state.type == StateType.COMPLETED and state.name == "Completed: 9/9 scored, 0 gaps"


def test_preflight_runs_once_and_run_json_holds_the_request(sim, sample_root, tmp_path, monkeypatch):
    """The command line's plan is the flow's (no second dataset preflight), and run.json's `args` is
    the typed request the command line built."""
    real, requests = run_plan.preflight, []

    def counted(request: RunRequest) -> run_plan.Plan:
        requests.append(request)
        return real(request)

    monkeypatch.setattr(run_plan, "preflight", counted)
    code, run = run_cli(monkeypatch, sim, sample_root, tmp_path / "out", "--users", "0", "--limit-questions", "1",
                        base_url=f"http://127.0.0.1:{_closed_port()}/v1")
    assert code == 4 and len(requests) == 1
    asked = RunRequest(dataset=sample_root, output=tmp_path / "out", users=[0], limit_questions=1)
    assert requests == [asked] and read_record(run.run, RunFile).args == asked
    assert run_plan._PREFLIGHTED == {}  # the flow took the plan
