"""One attempt of a step (issue 23): the candidate's or the judge's call in its own usage scope. An
exception, or a response with `success=False`, becomes one failure with one precedence (what the
response says of its failure, then the category of the last failed request, then the exception's
class, then 'failed'); its errors.jsonl line is written and the disk probed. The step keeps only
"call, build my record"."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from mobilemem import usage
from mobilemem.errors import error_record, failure_record
from mobilemem.failure_kinds import FailureKind
from mobilemem.models import raise_if_cancelled
from mobilemem.records import ErrorLine, ErrorStage, Failure, ObservedRequest, Usage
from mobilemem.rundir import append_error

if TYPE_CHECKING:
    from lifecycle.context import UserContext

R = TypeVar("R")


@dataclass(frozen=True)
class Attempt(Generic[R]):
    started: datetime
    response: R | None  # None when the call raised
    error: ErrorLine | None  # the errors.jsonl line of its failure, already written
    failure: Failure | None  # the failure as the step's record keeps it (pointing at that line)
    seconds: float  # how long the call took
    requests: list[ObservedRequest] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


async def attempt(user: UserContext, stage: ErrorStage, call: Callable[[], Awaitable[R]], **ids: Any) -> Attempt[R]:
    """Run `call()` once for the step `stage` of `user` (ids: user, session, question, image paths)."""
    started, clock, response, error, label = datetime.now(UTC), time.perf_counter(), None, None, None
    with usage.scope() as scope:
        try:
            response = await call()
        except Exception as exc:
            raise_if_cancelled()
            error = error_record(exc, stage=stage, **ids)
            label = usage.failure_category(scope.requests) or error.failure.label
    seconds = time.perf_counter() - clock
    if response is not None and not getattr(response, "success", True):
        said: Failure | None = getattr(response, "failure", None)
        label = said.label if said is not None else usage.failure_category(scope.requests) or FailureKind.FAILED
        error = failure_record(stage=stage, error_type=label, reason=(said.message if said else None) or "failed",
                               frames=usage.failure_frames(scope.requests), **ids)
    failure = None
    if error is not None:
        append_error(user.run, error)
        user.disk.probe()
        failure = Failure.of_label(label or error.failure.label, message=error.failure.message, error_id=error.id)
    return Attempt(started, response, error, failure, seconds, scope.requests, scope.usage())
