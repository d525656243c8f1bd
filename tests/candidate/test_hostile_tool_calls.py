"""Hostile tool calls from the model (prompt injection): every escape is refused by ReMe's own path
resolution (or the plugin's narrower scope), as a tool error the agent sees, and the answer goes on;
a reply flooding its tools runs at most `candidate.max_tool_calls` of them, the rest refused alike."""

import json
import os

import pytest

from mobilemem.reme.answer import answer_question
from mobilemem.simulator import FaultRule
from mobilemem.simulator.usage_rules import message_text

HOSTILE = [
    ("read", {"path": "../../1/workspace/daily/x.md"}),
    ("read", {"path": "/etc/passwd"}),
    ("read", {"path": "file:///etc/passwd"}),
    ("read", {"path": "daily/%2e%2e/%2e%2e/metadata"}),
    ("read", {"path": "daily\\..\\..\\metadata"}),
    ("read", {"path": "mem_session/agentscope/other-answer.jsonl"}),  # inside the workspace, not memory
    ("read", {"path": "metadata/file_catalog/default.jsonl.zst"}),
    ("read", {"path": "daily/planted/passwd"}),  # a symlink planted inside the memory, leading out
    ("read_image", {"path": "/etc/hostname"}),
    ("read_image", {"path": "../../../../image/uid1/x.png"}),
    ("read_image", {"path": "daily/planted/passwd"}),
    ("read_image", {"path": "mem_session/agentscope/other-answer.jsonl"}),
    ("bm25_search", {"query": "x" * 10_000_000}),
    ("read", {"path": "daily/" + "a" * 10_000_000}),
]


def _plant(workspace):
    os.symlink("/etc", workspace / "daily" / "planted")
    (workspace / "mem_session" / "agentscope" / "other-answer.jsonl").write_text('{"secret": 1}\n')


@pytest.mark.parametrize(("tool", "arguments"), HOSTILE, ids=[f"{t}-{str(a)[:30]}" for t, a in HOSTILE])
async def test_escape_attempts_are_tool_errors_and_the_answer_goes_on(ingested, sim, config, copied_app, tool,
                                                                     arguments):
    app, _ = await copied_app(prepare=_plant)
    job = ingested.dataset.users[0].questions[0]
    sim.faults = [FaultRule(role="answer", contains="", kind="tool_call", tool=tool, arguments=json.dumps(arguments),
                            times=1)]
    response = await answer_question(app, job, config.candidate)
    assert response.success and response.finished_reason == "completed"
    first = response.tool_calls[0]
    if tool == "bm25_search":  # a huge query is no escape: ReMe searches it and finds nothing
        assert first.name == tool
    else:
        assert (first.name, first.ok) == (tool, False) and first.error
        assert "root:" not in first.error and "secret" not in first.error
    assert first.error is None or len(first.error) < 1000  # a short message, not an echo of 10 MB
    if tool != "read_image":  # after a failed read_image the simulator's policy answers at once
        assert [(c.name, c.ok) for c in response.tool_calls[1:]] == [("bm25_search", True), ("read_image", True)]
        gold = ingested.dataset.judge_questions[job.question_id].answer
        assert any(g in response.answer for g in (gold if isinstance(gold, list) else [gold]))


@pytest.mark.parametrize(("calls", "cap"), [(40, 8), pytest.param(10_000, None, marks=pytest.mark.slow)],
                         ids=["40-over-8", "10000-over-default"])  # the latter: AgentScope's own work per call, ~30 s
async def test_a_reply_flooding_its_tools_runs_the_cap_and_the_rest_are_refused_tool_errors(ingested, sim, config,
                                                                                             copied_app, calls, cap):
    preset = config.candidate.model_copy(update={"max_tool_calls": cap or config.candidate.max_tool_calls})
    app, _ = await copied_app(preset=preset)
    sim.faults = [FaultRule(role="answer", contains="", kind="many_tool_calls", calls=calls, times=1)]
    response = await answer_question(app, ingested.dataset.users[0].questions[0], preset)
    assert response.success and response.finished_reason == "completed" and response.answer
    assert len(response.tool_calls) == preset.max_tool_calls and all(c.ok for c in response.tool_calls)
    assert response.refused_tool_calls == calls - preset.max_tool_calls
    followup = sim.requests[1].body  # what the agent sent next: a result for every call, the excess refused
    results = [message_text(m) for m in followup["messages"] if m.get("role") == "tool"]
    assert len(results) == calls and sum("refused" in r and "cap" in r for r in results) == calls - preset.max_tool_calls
