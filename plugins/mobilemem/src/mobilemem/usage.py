"""Observed model usage (DESIGN §7.1): the scopes model requests are filed in, and usage policy v2
over them.

Every HTTP exchange of a model role is seen at the transport (`mobilemem.transport`), which files
one `ObservedRequest` into the `UsageScope` that was current when the request started. Scopes
live in a ContextVar, so concurrent scopes in one event loop never see each other's requests.
Requests made outside any scope are not recorded.

Policy v2: counters come from successful requests only, and a counter that a successful request
did not report stays unknown (null), never 0. Failed requests carry no tokens.
(Policy v3 changed only summary.json's means, `mobilemem.run_usage`; the counting here is v2's.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from mobilemem.errors import Frame, caller_frames
from mobilemem.failure_kinds import FailureKind
from mobilemem.records import Failure, ObservedRequest, StackFrame, Usage, UsageCounter

COUNTERS = ("prompt_tokens", "completion_tokens", "total_tokens", "reasoning_tokens", "cached_tokens")


class UsageScope:
    """The requests of one unit of work (a session ingest, an answer, a judgment).

    Scopes nest: a request is filed in the current scope and in every scope around it, so a
    domain function can look at its own requests while its caller still accounts for them.
    """

    def __init__(self, parent: UsageScope | None = None) -> None:
        self.parent = parent
        self.requests: list[ObservedRequest] = []

    def usage(self) -> Usage:
        return summarize(self.requests)

    def file(self, request: ObservedRequest) -> None:
        """File `request` here and in every scope around this one."""
        target: UsageScope | None = self
        while target is not None:
            target.requests.append(request)
            target = target.parent


_current: ContextVar[UsageScope | None] = ContextVar("mobilemem_usage_scope", default=None)


def current_scope() -> UsageScope | None:
    """The scope a request starting now is filed in (None outside any `scope()`)."""
    return _current.get()


@contextmanager
def scope() -> Iterator[UsageScope]:
    """Record every model request started inside the `with` block (and the tasks it spawns)."""
    current = UsageScope(parent=_current.get())
    token = _current.set(current)
    try:
        yield current
    finally:
        _current.reset(token)


def model_turns(requests: Iterable[ObservedRequest]) -> list[ObservedRequest]:
    """An agent's own reasoning calls (everything but context compression)."""
    return [r for r in requests if not r.compression]


def failure_category(requests: Iterable[ObservedRequest]) -> str | None:
    """The category of the last failed request, if one failed ('HTTP 500', 'timeout', ...)."""
    failed = [r for r in requests if not r.success]
    return (failed[-1].failure.label if failed[-1].failure else FailureKind.FAILED) if failed else None


def failure_frames(requests: Iterable[ObservedRequest]) -> list[StackFrame]:
    """Where the last failed request was made (the runner's frames), for a failure record; when no
    request failed (an unparseable reply, an error inside ReMe), where this is called from."""
    failed = [r.failure.frames for r in requests if not r.success and r.failure and r.failure.frames]
    return failed[-1] if failed else stack_frames(caller_frames(__file__))


def stack_frames(frames: Iterable[Frame]) -> list[StackFrame]:
    return [StackFrame(file=file, line=line, function=function) for file, line, function in frames]


def request_failure(error: str | None, category: str | None, frames: Iterable[Frame]) -> Failure | None:
    """A failed exchange's failure: `category` its label ('HTTP 500', 'timeout', ...)."""
    if error is None and category is None:
        return None
    return Failure.of_label(category or FailureKind.FAILED, message=error, frames=stack_frames(frames))


def _counter(values: list[int | None], observed: int) -> UsageCounter:
    reported = [v for v in values if v is not None]
    return UsageCounter(value=sum(reported) if reported else None, reported_by=len(reported), observed=observed)


def _tokens(request: ObservedRequest) -> int | None:
    if request.total_tokens is not None:
        return request.total_tokens
    if request.prompt_tokens is not None and request.completion_tokens is not None:
        return request.prompt_tokens + request.completion_tokens
    return None


def summarize(requests: Iterable[ObservedRequest]) -> Usage:
    """Usage policy v2: counters from successful requests only; unknown stays null, never 0."""
    requests = list(requests)
    good = [r for r in requests if r.success]
    observed = len(requests)
    counters = {name: _counter([getattr(r, name) for r in good], observed) for name in COUNTERS}
    return Usage(requests=observed, successful_requests=len(good),
                 tokens=_counter([_tokens(r) for r in good], observed), **counters)


def known_tokens(usage: Usage) -> int | None:
    """One unit's tokens (0 when it made no request), or None when a successful request of it did
    not report them. Failed requests carry no tokens by policy: they do not make a count unknown."""
    return None if usage.tokens.reported_by < usage.successful_requests else usage.tokens.value or 0
