"""The MobileMem judge: one user message, no system prompt, the judge preset (DESIGN §7).

It receives only the question, the references, the evidence and the candidate's final answer,
never the trajectory. A failed call, or a reply that is unparseable or ambiguous
(`mobilemem_judge.parse`), is a judge gap (`success=False`, `failure` its reason), never a 0.
Usage is the caller's: its scope sees the request, and it is never the candidate's.
"""

from __future__ import annotations

from agentscope.message import TextBlock
from agentscope.model import ChatModelBase
from pydantic import BaseModel, ConfigDict

from mobilemem.dataset import JudgeQuestion
from mobilemem.failure_kinds import FailureKind
from mobilemem.models import reply_text, within_budget
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
    content = [TextBlock(text=fill(rubric, question, prediction))]
    raw, failure, _ = await within_budget(lambda: reply_text(model, content), timeout_s, what="judgment",
                                          over=FailureKind.TIMEOUT, model_errors=True)
    if failure is not None or raw is None:
        return Judgment(success=False, label=None, decided_by=None, raw_reply=None, failure=failure)
    if max_reply_bytes is not None and len(raw.encode("utf-8")) > max_reply_bytes:
        too_large = f"the judge's reply is larger than {max_reply_bytes} bytes"
        return _gap(raw[:1000], FailureKind.REPLY_TOO_LARGE, too_large)
    parsed = parse_label(raw)
    if parsed.label is None:
        return _gap(raw, parsed.gap, _GAP_REASONS[parsed.gap or UNPARSEABLE], parsed.decided_by)
    return Judgment(success=True, label=parsed.label, decided_by=parsed.decided_by, raw_reply=raw)
