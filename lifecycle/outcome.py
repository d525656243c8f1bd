"""What a task returns to its flow (a few ids and a status, never the trajectory or payloads), as
the Prefect state its task run ends in.

A step that failed ends its task run `Failed` (the sanitized reason is the state's message), a step
the run no longer started ends `Cancelled`, a question blocked by its user's history or index ends
in a Cancelled-type state named for that gap; the StepOutcome rides along as the state's data, and
the flow reads it back with `run_step`. A task's own exception is never a gap: it propagates."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from prefect.client.schemas.objects import StateType
from prefect.states import Cancelled, Completed, Failed, State
from pydantic import BaseModel, ConfigDict, Field

from mobilemem.errors import sanitize
from mobilemem.failure_kinds import FailureKind
from mobilemem.records import Failure, GapStage, SummaryFile
from lifecycle.orchestration import mark_started, start_patiently


class StepOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)
    success: bool
    failure: Failure | None = None  # why it failed, pointing at its errors.jsonl line (None: no failure caused it)
    answer: str | None = None  # answer_question only: what the judge will read
    gap_stage: GapStage | None = None
    gap_reason: str | None = None  # a question's gap: the category summary.json counts it under (error.json)
    not_run: bool = False  # the run had stopped starting new work (a full disk): nothing was attempted
    blocked: bool = False  # a question skipped because its user's history or index failed
    reused: bool = False  # reuse_user only: the user's memory was copied from an earlier run
    reused_answers: dict[str, str] = Field(default_factory=dict)  # question id -> the copied answer text
    reused_judgments: tuple[str, ...] = ()  # question ids whose judgment was copied too

    def message(self) -> str:
        reason = self.gap_reason or (self.failure.label if self.failure else FailureKind.FAILED)
        detail = self.failure.message if self.failure else None
        text = f"{reason}: {detail}" if detail and detail != reason else str(reason)
        return sanitize(" ".join(text.split()))


NOT_RUN = StepOutcome(success=False, failure=Failure(kind=FailureKind.NOT_RUN), not_run=True)


def as_state(outcome: StepOutcome) -> State:
    """The final state of the task run that produced `outcome`."""
    if outcome.success:
        return Completed(data=outcome)
    if outcome.not_run:
        return Cancelled(message="not run: the run had stopped starting new work", data=outcome)
    if outcome.blocked:
        return State(type=StateType.CANCELLED, name=f"{(outcome.gap_stage or 'history').capitalize()} gap",
                     message=outcome.message(), data=outcome)
    return Failed(message=outcome.message(), data=outcome)


def reports_state(step: Callable[..., Awaitable[StepOutcome]]) -> Callable[..., Awaitable[State]]:
    """Under `@task`: the step's StepOutcome becomes its task run's final state."""
    @functools.wraps(step)
    async def reported(*args: Any, **kwargs: Any) -> State:
        mark_started()
        return as_state(await step(*args, **kwargs))
    return reported


async def run_step(task: Any, *args: Any) -> StepOutcome:
    """Run a `reports_state` task and return its StepOutcome (a task's own exception propagates; one
    the Prefect API refused to start is started again, see lifecycle.orchestration)."""
    state = await start_patiently(lambda: task(*args, return_state=True), f"task {task.name}")
    result = await state.aresult(raise_on_failure=False)
    if isinstance(result, BaseException):
        raise result
    return result


def run_state(summary: SummaryFile) -> State:
    """The parent flow run's final state says the result: `Completed: 8/13 scored, 5 gaps`, or
    Failed when no question was scored or the run stopped early (DESIGN §8)."""
    gaps = summary.gap_count
    result = f"{summary.scored}/{summary.expected} scored, {gaps} gap{'s' if gaps != 1 else ''}"
    if summary.state == "interrupted_by_error":
        return Failed(name=f"Failed: stopped early, {result}", message=f"stopped early: {result}", data=summary)
    if summary.scored == 0 and summary.expected > 0:
        return Failed(name=f"Failed: {result}", message=f"no question was scored: {result}", data=summary)
    return Completed(name=f"Completed: {result}", message=result, data=summary)
