"""The answer agent: a fresh AgentScope ReAct agent per question (DESIGN §4.3).

Its user message is the official QA template with the question and the memory-tool
instructions; its tools are `bm25_search`, `read` and `read_image`, confined to the user's memory.
The answer is the text of the final reply. Usage is the caller's: its scope sees every request;
this module only looks at its own requests to count iterations and see a `length` finish.
"""

from __future__ import annotations

import asyncio

from agentscope.message import TextBlock, UserMsg
from agentscope.model import ChatModelBase

from mobilemem import qa_template, usage
from mobilemem.candidate.agent import ReplyTrace, build_agent, model_turns, reply_outcome, save_trajectory
from mobilemem.candidate.tools import MemoryTools, UserMemory
from mobilemem.config import CandidatePreset
from mobilemem.dataset import CandidateQuestion
from mobilemem.errors import describe
from mobilemem.models import MODEL_CALL_ERRORS, failure_kind, raise_if_cancelled
from mobilemem.prompts import prompt
from mobilemem.records import AnswerResponse


async def answer_question(job: CandidateQuestion, memory: UserMemory, model: ChatModelBase,
                          preset: CandidatePreset) -> AnswerResponse:
    """Answer one question from memory with a fresh agent.

    A failed model call, an interrupted reply or an exhausted wall-clock budget gives
    `success=False`; an iteration cap or a truncated reply is still an answer. Anything else
    propagates to the caller.
    """
    tools = MemoryTools(memory)
    agent = build_agent("answer", prompt("answer_system"), model, tools.function_tools(), preset)
    message = UserMsg(name="user", content=[TextBlock(text=qa_template.render(job.question))])
    trajectory = memory.ws.trajectories / f"answer-{job.question_id}.json"
    answer, finished, error, kind = None, None, None, None
    trace = ReplyTrace()
    with usage.scope() as own:
        try:
            async with asyncio.timeout(preset.answer_timeout_s):
                reply = await trace.run(agent, message)
            raise_if_cancelled()  # after the budget's own cancellation was taken back
            finished, error = reply_outcome(reply)
            answer = reply.get_text_content() or ""
            kind = (finished or "error") if error else None
        except TimeoutError:
            finished, kind = "interrupted", "answer budget exceeded"
            error = f"the answer exceeded its {preset.answer_timeout_s:g} s budget"
        except MODEL_CALL_ERRORS as exc:
            raise_if_cancelled()  # a request cut short by an interrupt is not a failure
            error, kind = describe(exc), failure_kind(exc)
        finally:
            save_trajectory(agent, trajectory, tools.sent_images)
    turns = model_turns(own.requests)
    return AnswerResponse(
        success=error is None, answer=answer if error is None else None, finished_reason=finished,
        truncated=bool(turns) and turns[-1].finish_reason == "length", iterations=len(turns),
        tool_calls=trace.tool_calls,
        trajectory_path=trajectory.relative_to(memory.ws.root).as_posix(), error_kind=kind, error=error)
