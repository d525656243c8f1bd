"""Answers through the plugin's agentic_answer job on ReMe's bench wrapper, against the simulator."""

import json

import pytest
import pytest_asyncio

from conftest import MARKER
from mobilemem import usage
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.reme import answer_step
from mobilemem.reme.answer import answer_question
from mobilemem.simulator import FaultRule


def _correct(answer: str | None, gold: str | list[str]) -> bool:
    golds = gold if isinstance(gold, list) else [gold]
    return any(g.lower() in (answer or "").lower() for g in golds)


async def _answer_all(ingested, simulator, preset):
    simulator.reset()
    results = {}
    for user in ingested.dataset.users:
        for job in user.questions:
            with usage.scope() as scope:
                response = await answer_question(ingested.apps[user.user_id], job, preset)
            results[job.question_id] = (response, scope.requests)
    requests = simulator.requests
    simulator.reset()
    return results, requests


@pytest_asyncio.fixture(scope="session")
async def answered(ingested, simulator, config):
    return await _answer_all(ingested, simulator, config.candidate)


def _accuracy(ingested, results) -> float:
    judge = ingested.dataset.judge_questions
    return sum(_correct(r.answer, judge[qid].answer) for qid, (r, _) in results.items()) / len(results)


def test_every_selected_question_is_answered_from_the_images(ingested, answered):
    results, _ = answered
    assert set(results) == set(ingested.dataset.judge_questions)
    for qid, (response, _) in results.items():
        assert response.success and response.finished_reason == "completed" and not response.truncated
        assert [(c.name, c.ok) for c in response.tool_calls] == [("bm25_search", True), ("read_image", True)]
        assert response.iterations == 3
        assert (ingested.workspaces[int(qid.split("_")[0])] / response.trajectory_path).is_file()
    assert _accuracy(ingested, results) >= 0.9


async def test_accuracy_collapses_when_read_image_hands_the_model_base64_text(ingested, simulator, config,
                                                                             monkeypatch):
    def remes_text_tool(job, workspace, folder):
        # ReMe's generic job tool: the same read_image job, its result as text (the base64 string)
        return ingested.apps[0].context.components["agent_wrapper"]["bench"]._make_tool(job)

    monkeypatch.setattr(answer_step, "image_tool", remes_text_tool)
    results, requests = await _answer_all(ingested, simulator, config.candidate)
    assert all(r.success for r, _ in results.values())
    assert any("iVBORw0KGgo" in json.dumps(r.body) or "/9j/" in json.dumps(r.body) for r in requests)
    assert _accuracy(ingested, results) <= 0.2


def test_answers_see_no_reference_and_usage_matches_the_simulator(answered):
    results, requests = answered
    assert not [r.id for r in requests if MARKER in json.dumps(r.body, ensure_ascii=False)]
    observed = [o for _, scope in results.values() for o in scope]
    assert len(observed) == len(requests)
    assert sum(o.total_tokens for o in observed) == sum(r.usage["total_tokens"] for r in requests)


def test_the_agent_gets_exactly_the_three_tools_and_the_official_template(answered):
    _, requests = answered
    for request in requests:
        assert sorted(t["function"]["name"] for t in request.body["tools"]) == ["bm25_search", "read", "read_image"]
        assert "<current-time>" not in json.dumps(request.body)
    user_text = next(m for m in requests[0].body["messages"] if m["role"] == "user")["content"][0]["text"]
    assert user_text.startswith("Question:\n") and "Answer Rules:" in user_text
    assert "bm25_search(query, limit=5)" in user_text and "[Retrieved Memories]" not in user_text


def test_trajectories_are_remes_native_agent_states(ingested, answered):
    results, _ = answered
    response, _ = results["0_q_1"]
    lines = (ingested.workspaces[0] / response.trajectory_path).read_text().splitlines()
    assert lines and all(json.loads(line) for line in lines)


async def test_tiny_context_triggers_counted_compression(ingested, sim, config, copied_app):
    preset = config.candidate.model_copy(update={"context_size": 3000})
    model = build_chat_model(Endpoint.simulated("candidate", config, sim.base_url), preset)
    try:
        app, _ = await copied_app(preset=preset, model=model)
        with usage.scope() as scope:
            response = await answer_question(app, ingested.dataset.users[0].questions[0], preset)
    finally:
        await close_chat_model(model)
    assert response.success
    compressions = [r.role for r in sim.requests].count("compression")
    assert compressions >= 1 and sum(r.compression for r in scope.requests) == compressions
    assert response.iterations == sum(not r.compression for r in scope.requests)


@pytest.mark.parametrize("kind", ["malformed", "http_500"])
async def test_a_failed_compression_request_fails_the_answer(ingested, sim, config, copied_app, kind):
    """AgentScope gives up on a failed compression and goes on; the answer it then reaches is
    still a failed answer (a gap), never something to judge."""
    preset = config.candidate.model_copy(update={"context_size": 3000})
    model = build_chat_model(Endpoint.simulated("candidate", config, sim.base_url), preset)
    sim.faults = [FaultRule(role="compression", contains="", kind=kind)]
    try:
        app, _ = await copied_app(preset=preset, model=model)
        response = await answer_question(app, ingested.dataset.users[0].questions[0], preset)
    finally:
        await close_chat_model(model)
    assert "compression" in [r.role for r in sim.requests]
    expected = {"malformed": "malformed response", "http_500": "HTTP 500"}[kind]
    assert not response.success and response.answer is None and response.failure.label == expected


async def test_wall_clock_budget_interrupts(ingested, sim, config):
    sim.latency_s = 0.4
    preset = config.candidate.model_copy(update={"answer_timeout_s": 0.6})
    response = await answer_question(ingested.apps[0], ingested.dataset.users[0].questions[0], preset)
    assert not response.success and response.finished_reason == "interrupted"
    assert response.failure.label == "answer budget exceeded" and "0.6 s budget" in response.failure.message
    assert response.answer is None


@pytest.mark.parametrize(("kind", "success", "finished", "truncated"), [
    ("http_500", False, None, False),
    ("endless_tool_calls", True, "exceed_max_iters", False),
    ("truncated", True, "completed", True),
    ("unknown_tool", True, "completed", False),
    ("empty_reply", True, "completed", False),
    ("invalid_tool_args", True, "completed", False),
])
async def test_model_faults(ingested, sim, config, copied_app, kind, success, finished, truncated):
    once = kind in ("unknown_tool", "invalid_tool_args")
    sim.faults = [FaultRule(role="answer", contains="", kind=kind, times=1 if once else None)]
    preset = config.candidate.model_copy(update={"max_iters": 3 if kind == "endless_tool_calls" else 30})
    app, _ = await copied_app(preset=preset)
    response = await answer_question(app, ingested.dataset.users[0].questions[0], preset)
    assert (response.success, response.finished_reason, response.truncated) == (success, finished, truncated)
    if kind == "http_500":
        assert len(sim.requests) == 1 and "500" in response.failure.message and response.failure.label == "HTTP 500"
    if kind == "endless_tool_calls":
        assert response.iterations == 4 and sim.requests[-1].final  # 3 tool rounds + the forced final call
    if kind == "unknown_tool":
        assert response.answer and response.tool_calls and response.tool_calls[-1].ok
    if kind == "empty_reply":  # an empty answer is an answer (scored), not a gap
        assert response.answer == "" and response.tool_calls == []
    if kind == "invalid_tool_args":  # the broken call is a tool error the agent sees; it answers anyway
        assert response.answer and len(sim.requests) >= 2
