"""Building a fresh AgentScope agent from the candidate preset, and saving its native trajectory.

Every agent: zero model retries and no fallback model; tools allowed without confirmation;
runtime-state injection off (the model is never told today's date); native context compression
at the preset's ratios, raising instead of silently truncating when it fails; the preset's image
cap; and an interruption that raises, so a wall-clock budget surfaces as a timeout.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentscope.agent import Agent, ContextConfig, InjectionConfig, ModelConfig, ReActConfig
from agentscope.event import ToolResultEndEvent, ToolResultStartEvent, ToolResultTextDeltaEvent
from agentscope.message import Msg, ToolResultState
from agentscope.model import ChatModelBase
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit

from mobilemem.config import CandidatePreset
from mobilemem.errors import sanitize
from mobilemem.records import ObservedRequest, ToolCallRecord
from mobilemem.rundir import write_bytes_atomic

MAX_TOOL_ERROR = 500
ALLOW = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="allowed by the benchmark runner")


def allowed_tool(func: Callable[..., Any]) -> FunctionTool:
    return FunctionTool(func, permission=ALLOW)


def build_agent(name: str, system_prompt: str, model: ChatModelBase, tools: Sequence[FunctionTool],
                preset: CandidatePreset) -> Agent:
    return Agent(
        name=name,
        system_prompt=system_prompt,
        model=model,
        toolkit=Toolkit(tools=list(tools)),
        model_config=ModelConfig(max_retries=0, fallback_model=None),
        context_config=ContextConfig(trigger_ratio=preset.trigger_ratio, reserve_ratio=preset.reserve_ratio,
                                     max_image_num=preset.max_images, compression_fallback_to_truncation=False),
        react_config=ReActConfig(max_iters=preset.max_iters, interruption_raise_cancelled_error=True),
        injection_config=InjectionConfig(inject_runtime_state=False),
    )


def _strip_payloads(node: Any, saved: Mapping[str, str]) -> Any:
    """Replace every base64 payload by a reference to the saved image file it came from."""
    if isinstance(node, dict):
        if node.get("type") == "base64" and isinstance(node.get("data"), str):
            return {**node, "data": "", "saved_as": saved.get(node["data"])}
        return {key: _strip_payloads(value, saved) for key, value in node.items()}
    if isinstance(node, list):
        return [_strip_payloads(item, saved) for item in node]
    if isinstance(node, str) and "base64," in node:
        return node.split("base64,", 1)[0] + "base64,[image payload removed]"
    return node


def save_trajectory(agent: Agent, path: Path, saved: Mapping[str, str]) -> None:
    """The agent's native state (`model_dump(mode="json")`) without image payloads.

    `saved` maps each base64 payload the agent saw to the memory path of its saved image file.
    """
    state = _strip_payloads(agent.state.model_dump(mode="json"), saved)
    write_bytes_atomic(path, json.dumps(state, ensure_ascii=False, indent=1).encode("utf-8"))


class ReplyTrace:
    """What one reply did, gathered from the agent's event stream as it happens (so context
    compression, which rewrites the agent's history, cannot hide a tool call)."""

    def __init__(self) -> None:
        self.reply: Msg | None = None
        self.tool_calls: list[ToolCallRecord] = []
        self._names: dict[str, str] = {}
        self._texts: dict[str, str] = {}

    def _see(self, item: object) -> None:
        if isinstance(item, Msg):
            self.reply = item
        elif isinstance(item, ToolResultStartEvent):
            self._names[item.tool_call_id], self._texts[item.tool_call_id] = item.tool_call_name, ""
        elif isinstance(item, ToolResultTextDeltaEvent):
            self._texts[item.tool_call_id] = (self._texts.get(item.tool_call_id, "") + item.delta)[:MAX_TOOL_ERROR]
        elif isinstance(item, ToolResultEndEvent):
            ok = item.state == ToolResultState.SUCCESS
            self.tool_calls.append(ToolCallRecord(name=self._names.get(item.tool_call_id, "?"), ok=ok,
                                                  error=None if ok else self._texts.get(item.tool_call_id)))

    async def run(self, agent: Agent, message: Msg) -> Msg:
        async for item in agent.reply_stream(message, yield_final_msg=True):
            self._see(item)
        if self.reply is None:
            raise RuntimeError("the agent ended without a final message")
        return self.reply


def reply_outcome(reply: Msg) -> tuple[str | None, str | None]:
    """(finished reason, error) of a final reply: interrupted and errored replies are failures."""
    finished = str(reply.finished_reason) if reply.finished_reason else None
    if finished == "interrupted":
        return finished, "the reply was interrupted"
    if finished not in ("completed", "exceed_max_iters"):
        return None, sanitize(f"the reply ended with {finished}: {reply.error}")
    return finished, None


def model_turns(requests: Sequence[ObservedRequest]) -> list[ObservedRequest]:
    """The agent's own reasoning calls (everything but context compression)."""
    return [r for r in requests if not r.compression]
