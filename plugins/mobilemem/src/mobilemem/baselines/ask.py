"""One answer request of a baseline: the question's whole answer is one model call, with the
preset's wall-clock budget and answer cap, and the same failure rules as the ReMe answer agent
(a failed request is a failed answer, never something to judge)."""

from __future__ import annotations

import asyncio

from agentscope.model import ChatModelBase

from mobilemem import usage
from mobilemem.candidate import cap_answer
from mobilemem.config import CandidatePreset
from mobilemem.errors import FailureKind, describe, failure_label
from mobilemem.models import MODEL_CALL_ERRORS, raise_if_cancelled, reply_text
from mobilemem.records import AnswerResponse, Failure, Retrieval


def _failed(kind: str, reason: str, finished=None, retrieval: Retrieval | None = None) -> AnswerResponse:
    return AnswerResponse(success=False, answer=None, finished_reason=finished,
                          failure=Failure.of_label(kind, message=reason), retrieval=retrieval)


async def ask(model: ChatModelBase, content: list, preset: CandidatePreset,
              retrieval: Retrieval | None = None) -> AnswerResponse:
    """`content`: the user message's AgentScope blocks (text, and images for bm25-rag)."""
    with usage.scope() as own:
        try:
            async with asyncio.timeout(preset.answer_timeout_s) as budget:
                text = await reply_text(model, content)
            if budget.expired():  # a library swallowed the budget's cancellation
                raise TimeoutError
        except TimeoutError:
            return _failed(FailureKind.ANSWER_BUDGET, f"the answer exceeded its {preset.answer_timeout_s:g} s budget",
                           "interrupted", retrieval)
        except asyncio.CancelledError:
            raise_if_cancelled()  # the run is being interrupted: not a failure of this answer
            return _failed(FailureKind.INTERRUPTED, "the answer request was interrupted", "interrupted", retrieval)
        except MODEL_CALL_ERRORS as exc:
            raise_if_cancelled()
            return _failed(usage.failure_category(own.requests) or failure_label(exc), describe(exc),
                           retrieval=retrieval)
    turns = usage.model_turns(own.requests)
    if (failed := usage.failure_category(own.requests)) is not None:
        return _failed(failed, f"the reply was read although its request failed ({failed})", retrieval=retrieval)
    answer, size = cap_answer(text, preset.max_answer_bytes)
    return AnswerResponse(success=True, answer=answer, finished_reason="completed", iterations=len(turns),
                          truncated=size is not None or (bool(turns) and turns[-1].finish_reason == "length"),
                          answer_bytes=size, retrieval=retrieval)
