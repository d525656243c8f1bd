"""Hostile tool calls from the model (prompt injection): every escape is a tool error the agent
sees, and the answer goes on."""

import json
import os
import shutil
from pathlib import Path

import pytest

from mobilemem.candidate.answer import answer_question
from mobilemem.candidate.tools import UserMemory
from mobilemem.candidate.workspace import Workspace
from mobilemem.simulator import FaultRule

HOSTILE = [
    ("read", {"path": "../../1/workspace/memory/daily/x.md"}),
    ("read", {"path": "/etc/passwd"}),
    ("read", {"path": "file:///etc/passwd"}),
    ("read", {"path": "daily/%2e%2e/%2e%2e/trajectories/x.json"}),
    ("read", {"path": "daily\\..\\..\\trajectories"}),
    ("read", {"path": "../trajectories/answer-0_q_1.json"}),
    ("read", {"path": "planted/answer-0_q_1.json"}),
    ("read_image", {"image_id": "/etc/hostname"}),
    ("read_image", {"image_id": "../../../../image/uid1/x.png"}),
    ("bm25_search", {"query": "x" * 10_000_000}),
    ("read", {"path": "daily/" + "a" * 10_000_000}),
]


@pytest.mark.parametrize(("tool", "arguments"), HOSTILE, ids=[f"{t}-{str(a)[:30]}" for t, a in HOSTILE])
async def test_escape_attempts_are_tool_errors_and_the_answer_goes_on(ingested, sim, candidate_model, config,
                                                                     tmp_path, tool, arguments):
    ws = Workspace(Path(shutil.copytree(ingested.workspaces[0].root, tmp_path / "0" / "workspace")))
    os.symlink(ws.trajectories, ws.memory / "planted")  # a symlink planted inside memory/
    job = ingested.dataset.users[0].questions[0]
    sim.faults = [FaultRule(role="answer", contains="", kind="tool_call", tool=tool, arguments=json.dumps(arguments),
                            times=1)]
    response = await answer_question(job, UserMemory.load(ws), candidate_model, config.candidate)
    assert response.success and response.finished_reason == "completed"
    first = response.tool_calls[0]
    assert (first.name, first.ok) == (tool, False) and first.error
    assert len(first.error) < 1000  # the error is a short message, not an echo of 10 MB
    if tool != "read_image":  # after a failed read_image the simulator's policy answers at once
        assert [(c.name, c.ok) for c in response.tool_calls[1:]] == [("bm25_search", True), ("read_image", True)]
        gold = ingested.dataset.judge_questions[job.question_id].answer
        assert any(g in response.answer for g in (gold if isinstance(gold, list) else [gold]))
