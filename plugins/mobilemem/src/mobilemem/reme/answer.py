"""Answer one question with the plugin's `agentic_answer` job (DESIGN §4.3).

The wall-clock budget `answer_timeout_s` bounds the whole job; exceeding it is an interrupted
answer. An answer one of whose requests failed (context compression included) is a failed
answer, whatever the agent made of it. An answer longer than `max_answer_bytes` is kept (and judged) cut to that size, marked
`truncated`, with its original size in `answer_bytes`. Iterations and a `length` finish are read from this answer's own observed requests (the
caller's usage scope still accounts for all of them).
"""

from __future__ import annotations

from reme.application import Application

from mobilemem import usage
from mobilemem.candidate import cap_answer
from mobilemem.records import AnswerResponse, CandidatePreset, Failure, ToolCallRecord
from mobilemem.dataset import CandidateQuestion
from mobilemem.failure_kinds import FailureKind
from mobilemem.models import within_budget


async def answer_question(app: Application, job: CandidateQuestion, preset: CandidatePreset) -> AnswerResponse:
    response, failure, requests = await within_budget(
        lambda: app.run_job("agentic_answer", query=job.question, question_id=job.question_id,
                            max_tool_calls=preset.max_tool_calls),
        preset.answer_timeout_s, what="answer", over=FailureKind.ANSWER_BUDGET,
        interrupted="the answer agent's reply was interrupted")
    if failure is not None or response is None:
        return AnswerResponse(success=False, answer=None, finished_reason="interrupted",
                              iterations=len(usage.model_turns(requests)), failure=failure)
    metadata = response.metadata
    turns = usage.model_turns(requests)
    finished = metadata.get("finished_reason")
    common = {"finished_reason": finished if finished in ("completed", "exceed_max_iters", "interrupted") else None,
              "iterations": len(turns), "truncated": bool(turns) and turns[-1].finish_reason == "length",
              "tool_calls": [ToolCallRecord.model_validate(c) for c in metadata.get("tool_calls") or []],
              "refused_tool_calls": int(metadata.get("refused_tool_calls") or 0),
              "trajectory_path": metadata.get("trajectory_path")}
    failed = usage.failure_category(requests)
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
