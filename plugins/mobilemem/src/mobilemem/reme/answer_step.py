"""`mobilemem_agentic_answer_step`: one question, one fresh agent on ReMe's `bench` wrapper.

Shaped like the agentic_answer steps of ReMe's benchmark plugins: a `BaseStep` whose job tools
are ReMe jobs. The user message is the official MobileMem QA template with the question and the
memory-tool instructions (`answer_step.yaml`); the tools are `bm25_search` and `read` (ReMe's
jobs, as ReMe's wrapper turns them into tools; session transcripts rendered) and `read_image`
(`image_tool`, whose result is an image block). The wrapper builds a fresh agent per reply and
dumps its native state under `mem_session/agentscope/`.

Every tool call goes through `_recorded`, which notes it and holds the answer to its cap
(`max_tool_calls`, the job's argument; `candidate.max_tool_calls`): past the cap a call is not run
but answered with a tool error saying so, and the reply goes on.

Response: `success` is false for an interrupted reply; `answer` is the final reply's text;
`metadata` holds `finished_reason`, `tool_calls`, `refused_tool_calls` and `trajectory_path` (the
dumped agent state, workspace-relative).
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath

from agentscope.message import TextBlock, ToolResultState, UserMsg
from agentscope.tool import FunctionTool, ToolChunk, Toolkit
from reme.steps.base_step import BaseStep

from mobilemem import qa_template
from mobilemem.records import CandidatePreset, ToolCallRecord
from mobilemem.reme.image_tool import image_tool

ANSWERED = ("completed", "exceed_max_iters")
MAX_TOOL_ERROR = 500
MAX_TOOL_RESULT = 16_000  # five bm25 hits with their lines fit; a whole long transcript read does not
DEFAULT_MAX_TOOL_CALLS: int = CandidatePreset.model_fields["max_tool_calls"].default


class ToolCalls:
    """One answer's tool calls: those run, noted as they happen, and how many were refused."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.records: list[ToolCallRecord] = []
        self.refused = 0
        self._started = 0

    def admit(self) -> bool:
        """Whether one more call may run (counted when it starts: calls of one reply may overlap)."""
        if self._started >= self.cap:
            self.refused += 1
            return False
        self._started += 1
        return True

    def refusal(self) -> ToolChunk:
        return ToolChunk(content=[TextBlock(text=f"Error: refused, this answer has made its {self.cap} tool calls "
                                                 "(the cap); answer with what you have found")],
                         state=ToolResultState.ERROR)


def _recorded(tool: FunctionTool, calls: ToolCalls) -> FunctionTool:
    """The same tool, each call noted as it happens, with its arguments and returned text (context
    compression cannot hide it later; the analysis side reads what the agent searched and opened),
    and refused without running once the answer has made `calls.cap` calls."""

    async def call(**kwargs) -> ToolChunk:
        if not calls.admit():
            return calls.refusal()
        arguments = json.loads(json.dumps(kwargs, default=str))  # as JSON, whatever the model sent
        try:
            chunk = await tool.call(**kwargs)
        except Exception as exc:
            calls.records.append(ToolCallRecord(name=tool.name, ok=False, error=str(exc)[:MAX_TOOL_ERROR],
                                                arguments=arguments))
            raise
        ok = chunk.state != ToolResultState.ERROR
        text = "".join(b.text for b in chunk.content if isinstance(b, TextBlock))
        calls.records.append(ToolCallRecord(name=tool.name, ok=ok, error=None if ok else text[:MAX_TOOL_ERROR],
                                            arguments=arguments, result=text[:MAX_TOOL_RESULT],
                                            result_chars=len(text)))
        return chunk

    return FunctionTool(func=call, name=tool.name, description=tool.description, input_schema=tool.input_schema,
                        is_concurrency_safe=tool.is_concurrency_safe)


class AgenticAnswerStep(BaseStep):
    TOOL_CONTEXT_PREFIX = "mobilemem_answer"
    MEMORY_DIRS = ("daily_dir", "digest_dir", "session_dir")

    def _injected(self) -> dict[str, dict]:
        """Server-owned arguments of the ReMe job tools (the model neither sees nor sets them):
        transcripts rendered turn by turn, and `read` kept by ReMe's own `_allowed_paths` check to
        the memory itself, away from the workspace's indexes and other answers' agent states."""
        memory = [str(self.config_value(key)) for key in self.MEMORY_DIRS]
        return {"bm25_search": {}, "read": {"read_step_format_session": True, "_allowed_paths": memory}}

    def _toolkit(self, question_id: str, calls: ToolCalls) -> Toolkit:
        wrapper = self.agent_wrapper
        context_id = f"{self.TOOL_CONTEXT_PREFIX}_{question_id}"
        # `_make_tool` is how ReMe's wrapper turns a job into a tool (schema, injected arguments,
        # text result); calling it keeps those exactly ReMe's for the two text tools.
        tools = [wrapper._make_tool(self.get_job(name), context_id, injected)  # noqa: SLF001
                 for name, injected in self._injected().items()]
        images = PurePosixPath(str(self.config_value("session_dir"))) / "images"
        tools.append(image_tool(self.get_job("read_image"), self.file_store.workspace_path, images))
        return Toolkit(tools=[_recorded(tool, calls) for tool in tools])

    async def execute(self):
        assert self.context is not None
        response = self.context.response
        question = str(self.context.get("query") or "")
        if not question.strip():
            response.success, response.answer = False, "Error: query cannot be empty"
            return response
        calls = ToolCalls(int(self.context.get("max_tool_calls") or DEFAULT_MAX_TOOL_CALLS))
        message = UserMsg(name="user", content=[
            TextBlock(text=qa_template.render(question, self.get_prompt("memory_tools").rstrip("\n")))])
        result = await self.agent_wrapper.reply(
            message, system_prompt=self.get_prompt("system_prompt").rstrip("\n"),
            toolkit=self._toolkit(str(self.context.get("question_id") or "question"), calls))
        finished = str((result.get("last_message") or {}).get("finished_reason") or "") or None
        response.success = finished in ANSWERED
        response.answer = (result.get("result") or "") if response.success else f"the reply ended {finished}"
        state = self.agent_wrapper.session_path / f"{result.get('session_id')}.jsonl"
        response.metadata.update({
            "finished_reason": finished, "tool_calls": [c.model_dump() for c in calls.records],
            "refused_tool_calls": calls.refused,
            "trajectory_path": state.relative_to(self.file_store.workspace_path).as_posix() if state.is_file() else None})
        return response
