"""One answer request of a baseline: the question's whole answer is one model call, with the
preset's wall-clock budget and answer cap, and the same failure rules as the ReMe answer agent
(a failed request is a failed answer, never something to judge)."""

from __future__ import annotations

from agentscope.model import ChatModelBase

from mobilemem import usage
from mobilemem.candidate import cap_answer
from mobilemem.records import AnswerResponse, CandidatePreset, Failure, Retrieval
from mobilemem.failure_kinds import FailureKind
from mobilemem.models import reply_text, within_budget


async def ask(model: ChatModelBase, content: list, preset: CandidatePreset,
              retrieval: Retrieval | None = None) -> AnswerResponse:
    """`content`: the user message's AgentScope blocks (text, and images for bm25-rag)."""
    text, failure, requests = await within_budget(lambda: reply_text(model, content), preset.answer_timeout_s,
                                                  what="answer", over=FailureKind.ANSWER_BUDGET,
                                                  interrupted="the answer request was interrupted", model_errors=True)
    if failure is None and (failed := usage.failure_category(requests)) is not None:
        failure = Failure.of_label(failed, message=f"the reply was read although its request failed ({failed})")
    if failure is not None or text is None:
        cut_short = failure is not None and failure.kind in (FailureKind.ANSWER_BUDGET, FailureKind.INTERRUPTED)
        return AnswerResponse(success=False, answer=None, finished_reason="interrupted" if cut_short else None,
                              failure=failure, retrieval=retrieval)
    turns = usage.model_turns(requests)
    answer, size = cap_answer(text, preset.max_answer_bytes)
    return AnswerResponse(success=True, answer=answer, finished_reason="completed", iterations=len(turns),
                          truncated=size is not None or (bool(turns) and turns[-1].finish_reason == "length"),
                          answer_bytes=size, retrieval=retrieval)
