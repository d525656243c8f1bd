"""What can fail: `FailureKind`, the closed list, and `failure_kinds()`, the one table from an
exception class to its kind (`failure_kind`). `failure_label` is the short category a failure is
counted under ('HTTP 500', 'timeout', or an unexpected exception's class name).

Apart from `errors` (which turns an exception into a record, and so imports the records): the
records import this module.
"""

from __future__ import annotations

import asyncio
import functools
import json
from enum import StrEnum


class FailureKind(StrEnum):
    """Every kind of failure a step, a request or a candidate records: closed."""

    TIMEOUT = "timeout"  # a request's or a session's or a judgment's time ran out
    HTTP_STATUS = "HTTP status"  # an error status: labelled "HTTP <status>"
    CONNECTION = "connection error"
    MALFORMED = "malformed response"
    BROKEN_STREAM = "broken stream"
    CANCELLED = "cancelled"  # a request cut short by a cancellation
    INTERRUPTED = "interrupted"  # an agent's reply cut short
    ANSWER_BUDGET = "answer budget exceeded"
    REPLY_TOO_LARGE = "reply too large"
    UNPARSEABLE = "unparseable reply"
    AMBIGUOUS = "ambiguous judge reply"
    JOB_FAILED = "ReMe job failed"
    FAILED = "failed"  # a step that said it failed without saying how
    WRITE_ERROR = "write error"
    NOT_RUN = "not run"
    EXCEPTION = "exception"  # anything else raised: labelled by its class name


@functools.cache
def failure_kinds() -> tuple[tuple[type[BaseException], FailureKind], ...]:
    """The one map from an exception to its kind, first match wins (a subclass before its base:
    openai.APITimeoutError is an APIConnectionError); anything else is FailureKind.EXCEPTION. Built
    on first use: the records import this module, and openai takes a second to import."""
    import httpx
    import openai

    return (
        (asyncio.CancelledError, FailureKind.CANCELLED),
        (openai.APITimeoutError, FailureKind.TIMEOUT),
        (httpx.TimeoutException, FailureKind.TIMEOUT),
        (openai.APIStatusError, FailureKind.HTTP_STATUS),
        (openai.APIConnectionError, FailureKind.CONNECTION),
        (httpx.TransportError, FailureKind.CONNECTION),
        (openai.APIResponseValidationError, FailureKind.MALFORMED),
        (json.JSONDecodeError, FailureKind.MALFORMED),
    )


def kind_of(cls: type[BaseException]) -> FailureKind:
    """The kind of a failure that raised an exception of class `cls` (failure_kinds)."""
    return next((kind for known, kind in failure_kinds() if issubclass(cls, known)), FailureKind.EXCEPTION)


def failure_kind(exc: BaseException) -> FailureKind:
    return kind_of(type(exc))


def kind_label(kind: FailureKind, *, status: int | None = None, exception: str | None = None) -> str:
    """The short category a failure is counted under: the kind, an HTTP status, an exception's class."""
    if kind is FailureKind.HTTP_STATUS and status is not None:
        return f"HTTP {status}"
    if kind is FailureKind.EXCEPTION and exception:
        return exception
    return kind.value


def failure_label(exc: BaseException) -> str:
    """kind_label of the failure that raised `exc`: 'timeout', 'HTTP 500', 'OSError', ..."""
    return kind_label(failure_kind(exc), status=getattr(exc, "status_code", None), exception=type(exc).__name__)
