"""The MobileMem judge: one user message, no system prompt, the judge preset (DESIGN §7).

It receives only the question, the references, the evidence and the candidate's final answer,
never the trajectory. A failed call, or a reply that is unparseable or ambiguous
(`mobilemem_judge.parse`), is a judge gap (`success=False`, `failure` its reason), never a 0.
Usage is the caller's: its scope sees the request, and it is never the candidate's.
"""

from __future__ import annotations

import asyncio

from agentscope.message import TextBlock
from agentscope.model import ChatModelBase
from pydantic import BaseModel, ConfigDict

from mobilemem import usage
from mobilemem.dataset import JudgeQuestion
from mobilemem.errors import FailureKind, describe, failure_label
from mobilemem.models import MODEL_CALL_ERRORS, raise_if_cancelled, reply_text
from mobilemem.records import DecidedBy, Failure, Label
from mobilemem_judge.parse import AMBIGUOUS, UNPARSEABLE, parse_label
from mobilemem_judge.rubric import fill

_GAP_REASONS = {UNPARSEABLE: "the judge's reply has no CORRECT/WRONG label",
                AMBIGUOUS: "the judge's reply has no JSON label and its words give both verdicts, CORRECT and WRONG"}


class Judgment(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    success: bool
    label: Label | None
    decided_by: DecidedBy | None
    raw_reply: str | None
    failure: Failure | None = None


def _gap(raw: str | None, kind: str | None, message: str, decided_by: DecidedBy | None = None) -> Judgment:
    """A judgment that is a judge gap: no label, the failure counted under `kind`."""
    return Judgment(success=False, label=None, decided_by=decided_by, raw_reply=raw,
                    failure=Failure.of_label(kind or FailureKind.FAILED, message=message))


async def judge_answer(question: JudgeQuestion, prediction: str, model: ChatModelBase, rubric: str, *,
                       timeout_s: float | None = None, max_reply_bytes: int | None = None) -> Judgment:
    """`timeout_s` bounds the judgment by wall clock; a reply over `max_reply_bytes` is a gap."""
    with usage.scope() as own:
        try:
            async with asyncio.timeout(timeout_s) as budget:
                raw = await reply_text(model, [TextBlock(text=fill(rubric, question, prediction))])
            if budget.expired():  # the library swallowed the budget's cancellation
                raise TimeoutError
            raise_if_cancelled()
        except TimeoutError:
            return _gap(None, FailureKind.TIMEOUT, f"the judgment exceeded its {timeout_s:g} s budget")
        except MODEL_CALL_ERRORS as exc:
            raise_if_cancelled()  # a request cut short by an interrupt is not a failure
            kind = usage.failure_category(own.requests) or failure_label(exc)  # the transport saw the exchange
            return _gap(None, kind, describe(exc))
    if max_reply_bytes is not None and len(raw.encode("utf-8")) > max_reply_bytes:
        return _gap(raw[:1000], FailureKind.REPLY_TOO_LARGE, f"the judge's reply is larger than {max_reply_bytes} bytes")
    parsed = parse_label(raw)
    if parsed.label is None:
        return _gap(raw, parsed.gap, _GAP_REASONS[parsed.gap or UNPARSEABLE], parsed.decided_by)
    return Judgment(success=True, label=parsed.label, decided_by=parsed.decided_by, raw_reply=raw)
