"""Observed model usage: every HTTP exchange of a model role, seen at the transport (DESIGN §7.1).

`RecordingTransport` wraps the httpx transport under the openai client. It parses usage while the
body is read (the openai SDK stops reading a stream at `data: [DONE]`, so parsing afterwards would
miss the final usage chunk) and files one `ObservedRequest` into the `UsageScope` that was current
when the request started. Scopes live in a ContextVar, so concurrent scopes in one event loop never
see each other's requests. Requests made outside any scope are not recorded.

Nothing recorded holds headers, credentials or payloads: status, timing, finish reason, counters
and a sanitized error.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

import httpx

from mobilemem.errors import describe
from mobilemem.records import ObservedRequest, Usage, UsageCounter

COUNTERS = ("prompt_tokens", "completion_tokens", "total_tokens", "reasoning_tokens", "cached_tokens")
_FORCED_TOOL = re.compile(rb'"tool_choice"\s*:\s*\{')
_MAX_JSON_BODY = 64 * 1024 * 1024


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


_current: ContextVar[UsageScope | None] = ContextVar("mobilemem_usage_scope", default=None)


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
    return (failed[-1].failure or "failed") if failed else None


def _exception_category(exc: BaseException) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.TransportError):
        return "connection error"
    return type(exc).__name__


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


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _BodyParser:
    """Extracts usage and finish reason from a JSON body or an SSE stream, fed chunk by chunk."""

    def __init__(self, streamed: bool) -> None:
        self.streamed = streamed
        self.usage: dict[str, Any] | None = None
        self.finish_reason: str | None = None
        self.done = False
        self.malformed = False
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        if not self.streamed:
            if len(self._buffer) > _MAX_JSON_BODY:
                raise ValueError("response body larger than 64 MiB")
            return
        *lines, rest = self._buffer.split(b"\n")
        self._buffer = bytearray(rest)
        for line in lines:
            self._line(line.strip())

    def _line(self, line: bytes) -> None:
        if not line.startswith(b"data:"):
            return
        payload = line[5:].strip()
        if payload == b"[DONE]":
            self.done = True
            return
        self._object(payload)

    def _object(self, payload: bytes) -> None:
        try:
            data = json.loads(payload)
        except ValueError:
            self.malformed = True
            return
        if not isinstance(data, dict):
            self.malformed = True
            return
        if isinstance(data.get("usage"), dict):
            self.usage = data["usage"]
        for choice in data.get("choices") or []:
            if isinstance(choice, dict) and choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def finish(self) -> None:
        if self.streamed:
            self._line(bytes(self._buffer).strip())
        elif self._buffer:
            self._object(bytes(self._buffer))
        self._buffer = bytearray()

    def counters(self) -> dict[str, int | None]:
        usage = self.usage or {}
        completion_details = usage.get("completion_tokens_details") or {}
        prompt_details = usage.get("prompt_tokens_details") or {}
        return {
            "prompt_tokens": _int(usage.get("prompt_tokens")),
            "completion_tokens": _int(usage.get("completion_tokens")),
            "total_tokens": _int(usage.get("total_tokens")),
            "reasoning_tokens": _int(completion_details.get("reasoning_tokens")) if isinstance(
                completion_details, dict) else None,
            "cached_tokens": _int(prompt_details.get("cached_tokens")) if isinstance(prompt_details, dict) else None,
        }


class _ObservedStream(httpx.AsyncByteStream):
    """Passes the body through unchanged, parsing it on the way; records once, on close."""

    def __init__(self, inner: httpx.AsyncByteStream, record: _PendingRecord) -> None:
        self._inner = inner
        self._record = record

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                self._record.parser.feed(chunk)
                yield chunk
        except Exception as exc:
            self._record.error = exc
            raise
        self._record.eof = True

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._record.close()


class _PendingRecord:
    def __init__(self, target: UsageScope | None, status: int, streamed: bool, compression: bool,
                 started_at: datetime) -> None:
        self.target = target
        self.status = status
        self.compression = compression
        self.started_at = started_at
        self.parser = _BodyParser(streamed)
        self.error: BaseException | None = None
        self.eof = False
        self._closed = False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.parser.finish()
        complete = self.error is None and (self.eof or self.parser.done)
        ok_status = 200 <= self.status < 300
        success = ok_status and complete and not self.parser.malformed
        failure = None
        if self.error is not None:
            error, failure = describe(self.error), _exception_category(self.error)
        elif not ok_status:
            error = failure = f"HTTP {self.status}"
        elif not complete:
            error, failure = "the response body was not read completely", "broken stream"
        elif self.parser.malformed:
            error, failure = "the response body is not valid JSON", "malformed response"
        else:
            error = None
        counters = self.parser.counters() if success else {}
        _file(self.target, ObservedRequest(
            started_at=self.started_at, finished_at=datetime.now(UTC), status=self.status, success=success,
            streamed=self.parser.streamed, compression=self.compression,
            finish_reason=self.parser.finish_reason if success else None, error=error, failure=failure,
            **counters))


def _file(target: UsageScope | None, record: ObservedRequest) -> None:
    while target is not None:
        target.requests.append(record)
        target = target.parent


class RecordingTransport(httpx.AsyncBaseTransport):
    """An httpx transport that observes every exchange for the current `UsageScope`."""

    def __init__(self, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self._inner = inner or httpx.AsyncHTTPTransport(retries=0)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        target = _current.get()
        started_at = datetime.now(UTC)
        compression = bool(_FORCED_TOOL.search(request.content)) if request.method == "POST" else False
        try:
            response = await self._inner.handle_async_request(request)
        except Exception as exc:
            _file(target, ObservedRequest(started_at=started_at, finished_at=datetime.now(UTC), status=None,
                                          success=False, streamed=False, compression=compression,
                                          error=describe(exc), failure=_exception_category(exc)))
            raise
        streamed = response.headers.get("content-type", "").startswith("text/event-stream")
        pending = _PendingRecord(target, response.status_code, streamed, compression, started_at)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _ObservedStream(response.stream, pending)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()

