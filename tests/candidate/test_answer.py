import json
import shutil
from pathlib import Path

import pytest
import pytest_asyncio
from agentscope.tool import ToolChunk

from conftest import MARKER
from mobilemem import usage
from mobilemem.candidate.answer import answer_question
from mobilemem.candidate.tools import MemoryTools, UserMemory
from mobilemem.candidate.workspace import Workspace
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.simulator import FaultRule


def _correct(answer: str | None, gold: str | list[str]) -> bool:
    golds = gold if isinstance(gold, list) else [gold]
    return any(g.lower() in (answer or "").lower() for g in golds)


async def _answer_all(ingested, simulator, model, preset, copy_to=None):
    """Answer every question; with `copy_to`, in copies of the workspaces (their trajectories)."""
    simulator.reset()
    results = {}
    for user in ingested.dataset.users:
        ws = ingested.workspaces[user.user_id]
        if copy_to is not None:
            ws = Workspace(Path(shutil.copytree(ws.root, copy_to / str(user.user_id))))
        memory = UserMemory.load(ws)
        for job in user.questions:
            with usage.scope() as scope:
                results[job.question_id] = (await answer_question(job, memory, model, preset), scope.requests)
    requests = simulator.requests
    simulator.reset()
    return results, requests


@pytest_asyncio.fixture(scope="session")
async def answered(ingested, simulator, candidate_model, config):
    return await _answer_all(ingested, simulator, candidate_model, config.candidate)


def _accuracy(ingested, results) -> float:
    judge = ingested.dataset.judge_questions
    return sum(_correct(r.answer, judge[qid].answer) for qid, (r, _) in results.items()) / len(results)


def test_every_selected_question_is_answered_from_the_images(ingested, answered):
    results, _ = answered
    assert set(results) == set(ingested.dataset.judge_questions)
    for response, _ in results.values():
        assert response.success and response.finished_reason == "completed" and not response.truncated
        assert [(c.name, c.ok) for c in response.tool_calls] == [("bm25_search", True), ("read_image", True)]
        assert response.iterations == 3
    assert _accuracy(ingested, results) >= 0.9


async def test_accuracy_collapses_when_read_image_returns_text(ingested, simulator, candidate_model, config,
                                                              monkeypatch, tmp_path):
    def text_only(self, image_id: str) -> ToolChunk:
        return ToolChunk(content=[])  # the same call, but no picture reaches the model

    monkeypatch.setattr(MemoryTools, "read_image", text_only)
    results, _ = await _answer_all(ingested, simulator, candidate_model, config.candidate, copy_to=tmp_path)
    assert all(r.success for r, _ in results.values())
    assert _accuracy(ingested, results) <= 0.2


def test_answers_see_no_reference_and_usage_matches_the_simulator(answered):
    results, requests = answered
    assert not [r.id for r in requests if MARKER in json.dumps(r.body, ensure_ascii=False)]
    observed = [o for _, scope in results.values() for o in scope]
    assert len(observed) == len(requests)
    assert sum(o.total_tokens for o in observed) == sum(r.usage["total_tokens"] for r in requests)


def test_trajectories_are_saved_without_payloads(ingested, answered):
    results, _ = answered
    for qid, (response, _) in results.items():
        user_id = int(qid.split("_")[0])
        text = (ingested.workspaces[user_id].root / response.trajectory_path).read_text()
        assert '"saved_as": "session/images/' in text and "iVBORw0KGgo" not in text


def _first_job(ingested, tmp_path):
    """The first question, answered in a copy of its user's workspace (the originals stay as built)."""
    user = ingested.dataset.users[0]
    copy = Workspace(Path(shutil.copytree(ingested.workspaces[user.user_id].root, tmp_path / "workspace")))
    return user.questions[0], UserMemory.load(copy)


async def test_tiny_context_triggers_counted_compression(ingested, sim, config, tmp_path):
    preset = config.candidate.model_copy(update={"context_size": 3000})
    model = build_chat_model(Endpoint.simulated("candidate", config, sim.base_url), preset)
    job, memory = _first_job(ingested, tmp_path)
    try:
        with usage.scope() as scope:
            response = await answer_question(job, memory, model, preset)
    finally:
        await close_chat_model(model)
    assert response.success
    assert [r.role for r in sim.requests].count("compression") >= 1
    assert sum(r.compression for r in scope.requests) == [r.role for r in sim.requests].count("compression")
    assert response.iterations == sum(not r.compression for r in scope.requests)


async def test_wall_clock_budget_interrupts(ingested, sim, candidate_model, config, tmp_path):
    sim.latency_s = 0.4
    job, memory = _first_job(ingested, tmp_path)
    preset = config.candidate.model_copy(update={"answer_timeout_s": 0.6})
    response = await answer_question(job, memory, candidate_model, preset)
    assert not response.success and response.finished_reason == "interrupted"
    assert "0.6 s budget" in response.error and response.answer is None


@pytest.mark.parametrize(("kind", "success", "finished", "truncated"), [
    ("http_500", False, None, False),
    ("endless_tool_calls", True, "exceed_max_iters", False),
    ("truncated", True, "completed", True),
    ("unknown_tool", True, "completed", False),
    ("empty_reply", True, "completed", False),
    ("invalid_tool_args", True, "completed", False),
])
async def test_model_faults(ingested, sim, candidate_model, config, kind, success, finished, truncated, tmp_path):
    once = kind in ("unknown_tool", "invalid_tool_args")
    sim.faults = [FaultRule(role="answer", contains="", kind=kind, times=1 if once else None)]
    job, memory = _first_job(ingested, tmp_path)
    preset = config.candidate.model_copy(update={"max_iters": 3 if kind == "endless_tool_calls" else 30})
    response = await answer_question(job, memory, candidate_model, preset)
    assert (response.success, response.finished_reason, response.truncated) == (success, finished, truncated)
    if kind == "http_500":
        assert len(sim.requests) == 1 and "500" in response.error
    if kind == "endless_tool_calls":
        assert response.iterations == 4 and sim.requests[-1].final  # 3 tool rounds + the forced final call
    if kind == "unknown_tool":
        assert [(c.name, c.ok) for c in response.tool_calls][0] == ("no_such_tool", False)
        assert response.answer and response.tool_calls[-1].ok
    if kind == "empty_reply":  # an empty answer is an answer (scored), not a gap
        assert response.answer == "" and response.tool_calls == []
    if kind == "invalid_tool_args":  # the broken call is a tool error the agent sees; it answers anyway
        assert (response.tool_calls[0].name, response.tool_calls[0].ok) == ("bm25_search", False)
        assert response.answer and len(sim.requests) == 2


def test_the_agent_gets_exactly_the_three_memory_tools_and_the_official_template(answered):
    _, requests = answered
    first = requests[0].body
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["bm25_search", "read", "read_image"]
    user_text = next(m for m in first["messages"] if m["role"] == "user")["content"][0]["text"]
    assert user_text.startswith("Question:\n") and "Answer Rules:" in user_text
    assert "bm25_search(query, limit=5)" in user_text and "[Retrieved Memories]" not in user_text
