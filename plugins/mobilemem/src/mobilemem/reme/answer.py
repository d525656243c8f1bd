"""Answer one question with the plugin's `agentic_answer` job (DESIGN §4.3).

The wall-clock budget `answer_timeout_s` bounds the whole job; exceeding it is an interrupted
answer. An answer one of whose requests failed (context compression included) is a failed
answer, whatever the agent made of it. An answer longer than `max_answer_bytes` is kept (and judged) cut to that size, marked
`truncated`, with its original size in `answer_bytes`. Iterations and a `length` finish are read from this answer's own observed requests (the
caller's usage scope still accounts for all of them).
"""

from __future__ import annotations

import asyncio

from reme.application import Application

from mobilemem import usage
from mobilemem.candidate import cap_answer
from mobilemem.config import CandidatePreset
from mobilemem.dataset import CandidateQuestion
from mobilemem.errors import FailureKind
from mobilemem.models import raise_if_cancelled
from mobilemem.records import AnswerResponse, Failure, ToolCallRecord

def _interrupted(requests, kind: str, reason: str) -> AnswerResponse:
    return AnswerResponse(success=False, answer=None, finished_reason="interrupted",
                          iterations=len(usage.model_turns(requests)), failure=Failure.of_label(kind, message=reason))


async def answer_question(app: Application, job: CandidateQuestion, preset: CandidatePreset) -> AnswerResponse:
    with usage.scope() as own:
        try:
            async with asyncio.timeout(preset.answer_timeout_s) as budget:
                response = await app.run_job("agentic_answer", query=job.question, question_id=job.question_id,
                                             max_tool_calls=preset.max_tool_calls)
            if budget.expired():  # a library swallowed the budget's cancellation
                raise TimeoutError
        except TimeoutError:
            return _interrupted(own.requests, FailureKind.ANSWER_BUDGET,
                                f"the answer exceeded its {preset.answer_timeout_s:g} s budget")
        except asyncio.CancelledError:
            raise_if_cancelled()  # the run is being interrupted: not a failure of this answer
            return _interrupted(own.requests, FailureKind.INTERRUPTED, "the answer agent's reply was interrupted")
    metadata = response.metadata
    turns = usage.model_turns(own.requests)
    finished = metadata.get("finished_reason")
    common = {"finished_reason": finished if finished in ("completed", "exceed_max_iters", "interrupted") else None,
              "iterations": len(turns), "truncated": bool(turns) and turns[-1].finish_reason == "length",
              "tool_calls": [ToolCallRecord.model_validate(c) for c in metadata.get("tool_calls") or []],
              "refused_tool_calls": int(metadata.get("refused_tool_calls") or 0),
              "trajectory_path": metadata.get("trajectory_path")}
    failed = usage.failure_category(own.requests)
    if not response.success:
        kind = FailureKind.INTERRUPTED if finished == "interrupted" else failed or FailureKind.FAILED
        return AnswerResponse(success=False, answer=None, failure=Failure.of_label(kind, message=str(response.answer)),
                              **common)
    if failed is not None:  # e.g. a compression request AgentScope gave up on: nothing false is scored
        return AnswerResponse(success=False, answer=None, **common, failure=Failure.of_label(
            failed, message=f"the answer was reached although one of its requests failed ({failed})"))
    text, size = cap_answer(str(response.answer), preset.max_answer_bytes)
    if size is not None:
        common["truncated"] = True
    return AnswerResponse(success=True, answer=text, answer_bytes=size, **common)
