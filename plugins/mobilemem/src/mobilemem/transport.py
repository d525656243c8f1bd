"""Model requests observed at the transport (DESIGN §7.1): every HTTP exchange of a model role.

`RecordingTransport` wraps the httpx transport under the openai client. It parses usage while the
body is read (the openai SDK stops reading a stream at `data: [DONE]`, so parsing afterwards would
miss the final usage chunk) and files one `ObservedRequest` into the `mobilemem.usage` scope that
was current when the request started.

A request is successful only if its response is 2xx and its body is a complete, valid chat
completion: for a stream, a chunk with a finish reason or `[DONE]` was read; otherwise a JSON
object whose `choices` carry a message. An invalid or incomplete body also raises
`IncompleteCompletion` to the client, so the step that asked for it fails instead of reading an
empty reply. Usage reported partially is not a failure: the missing counters stay unknown.

The transport also removes the credentials in use (verbatim, base64 and URL-encoded, also
JSON-escaped: `mobilemem.response_rewrite`) from every response body before any library reads it,
so a provider or model that echoes the key cannot get it into a note, an index, a trajectory or a
record.

A request cancelled in flight (an answer's wall-clock budget, an interrupt) is a failed request
with the failure `cancelled`, filed before the cancellation reaches the caller, so the step that
gave up on it still accounts for it. A failed request also keeps `frames`: the runner's frames of
the stack that made it (`errors.caller_frames`, taken only when a request fails), which is where
a step whose library turned the failure into a value (ReMe's failed job) finds its location.

Nothing recorded holds headers, credentials or payloads: status, timing, finish reason, counters,
a sanitized error and code locations (file, line, function; never a local).

A transport given a `RequestGate` (an endpoint limit shared between evaluations, DESIGN §12; the
runner builds it on Prefect) takes a turn from it before each request goes out and gives it back
once the response body has been read to its end or closed, or the request failed or was cancelled:
a stream holds its turn while it is read. The recorded timing starts once the turn is taken.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Protocol

import httpx

from mobilemem.errors import Frame, caller_frames, describe
from mobilemem.failure_kinds import FailureKind, failure_label, kind_label
from mobilemem.records import ObservedRequest
from mobilemem.response_body import BodyParser
from mobilemem.response_rewrite import Scrubber, StreamRewriter, secret_forms
from mobilemem.usage import UsageScope, current_scope, request_failure

_FORCED_TOOL = re.compile(rb'"tool_choice"\s*:\s*\{')
_CANCELLED = "the request was cancelled in flight (a wall-clock budget or an interrupt)"
_FAILURES = (Exception, asyncio.CancelledError)  # what a request can end with; both are recorded


def _cancelling() -> bool:
    """Whether the current task is being cancelled (False outside a running event loop)."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return False
    return task is not None and task.cancelling() > 0


def _failure(exc: BaseException) -> tuple[str, str]:
    """(sanitized error, failure category) of an exchange that raised `exc`."""
    return (_CANCELLED if isinstance(exc, asyncio.CancelledError) else describe(exc)), failure_label(exc)


class IncompleteCompletion(httpx.RemoteProtocolError):
    """A 2xx response to a chat request whose body is not a complete, valid chat completion."""


class RequestGate(Protocol):
    """Where a model request waits for its turn: called once per request, the context manager it
    returns is entered in the task that makes the request, before it goes out, and exited once,
    without exception details and possibly from another task (the one that closes the body)."""

    def __call__(self) -> AbstractAsyncContextManager[object]: ...


class _Turn:
    """A request's hold on its gate, given back once, however often it is asked to."""

    def __init__(self, slot: AbstractAsyncContextManager[object] | None) -> None:
        self._slot = slot

    @classmethod
    async def take(cls, gate: RequestGate | None) -> _Turn:
        if gate is None:
            return cls(None)
        slot = gate()
        await slot.__aenter__()
        return cls(slot)

    async def give_back(self) -> None:
        slot, self._slot = self._slot, None
        if slot is not None:
            await slot.__aexit__(None, None, None)


class _ObservedStream(httpx.AsyncByteStream):
    """Passes the body through with the credentials in use scrubbed, parsing it on the way; a chat
    completion that ends incomplete or invalid raises, so the step that asked for it fails; records
    once, on close.

    The body is read once, by one iterator over the inner stream, however often this stream is
    iterated: after `[DONE]` the openai SDK iterates it again to drain the rest, and by then the
    held-back tail (the scrubber's, the rewriter's) may already have made us read the inner stream
    to its end. A fresh iteration of httpcore's stream after the end of the message reads the
    connection again, and once the peer has closed it (an endpoint that died) httpcore loops on
    h11's `ConnectionClosed` without ever awaiting: the event loop stops, no timeout or
    cancellation can fire. So a second iteration continues the first one, and yields nothing once
    the body has ended."""

    def __init__(self, inner: httpx.AsyncByteStream, record: _PendingRecord, scrubber: Scrubber,
                 turn: _Turn) -> None:
        self._inner = inner
        self._turn = turn
        self._record = record
        self._scrubber = scrubber
        self._guard = StreamRewriter(record.parser.streamed, scrubber.forms)
        self._source: AsyncIterator[bytes] | None = None
        self._ended = False  # the inner stream ended or raised: never read again

    def _pass(self, chunk: bytes) -> bytes:
        self._record.parser.feed(chunk)  # the record sees the body as the provider sent it (scrubbed)
        return self._guard.feed(chunk)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._ended:
            return
        if self._source is None:
            self._source = aiter(self._inner)
        try:
            async for chunk in self._source:
                if out := self._pass(self._scrubber.feed(chunk)):
                    yield out
        except _FAILURES as exc:
            self._ended = True
            # after [DONE] the openai SDK drains the rest under a short cancel scope: not a failure
            if not (isinstance(exc, asyncio.CancelledError) and self._record.parser.done):
                self._record.fail(exc)
            await self._turn.give_back()
            raise
        self._ended = True
        await self._turn.give_back()  # the body has ended: the endpoint is done with this request
        if out := self._pass(self._scrubber.flush()) + self._guard.flush():
            yield out
        self._record.eof = True
        if self._record.validate and self._record.ok_status:
            self._record.parser.finish()
            if problem := self._record.parser.problem():
                self._record.fail(IncompleteCompletion(problem[0]))
                raise self._record.error

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._record.parser.feed(self._scrubber.flush())  # what arrived but was not read yet
            self._record.close()
            await self._turn.give_back()


class _PendingRecord:
    def __init__(self, target: UsageScope | None, status: int, streamed: bool, compression: bool,
                 started_at: datetime, validate: bool) -> None:
        self.target = target
        self.status = status
        self.ok_status = 200 <= status < 300
        self.compression = compression
        self.started_at = started_at
        self.validate = validate
        self.parser = BodyParser(streamed)
        self.error: BaseException | None = None
        self.eof = False
        self.frames: list[Frame] | None = None  # taken where the failure shows, while the caller's stack is there
        self._closed = False

    def fail(self, error: BaseException | None = None) -> None:
        """The exchange failed (with `error`, if it raised): keep the frames of the code that made it."""
        if error is not None:
            self.error = error
        if self.frames is None:
            self.frames = caller_frames(__file__)

    def _outcome(self) -> tuple[str | None, str | None]:
        """(error, failure category) of the exchange; (None, None) for a successful one."""
        if isinstance(self.error, IncompleteCompletion):
            return describe(self.error), (self.parser.problem() or ("", FailureKind.MALFORMED))[1]
        if self.error is not None:
            return _failure(self.error)
        if not self.ok_status:
            return f"HTTP {self.status}", kind_label(FailureKind.HTTP_STATUS, status=self.status)
        if self.parser.malformed:
            return "the response body is not valid JSON", FailureKind.MALFORMED
        if not (self.eof or self.parser.done):
            if _cancelling():  # the caller was cancelled while it was not reading (between chunks)
                return _CANCELLED, FailureKind.CANCELLED
            return "the response body was not read completely", FailureKind.BROKEN_STREAM
        if self.validate and (problem := self.parser.problem()):
            return problem
        return None, None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.parser.finish()
        error, failure = self._outcome()
        success = error is None
        counters = self.parser.counters() if success else {}
        if not success:
            self.fail()
        _file(self.target, ObservedRequest(
            started_at=self.started_at, finished_at=datetime.now(UTC), status=self.status, success=success,
            streamed=self.parser.streamed, compression=self.compression,
            finish_reason=self.parser.finish_reason if success else None,
            failure=request_failure(error, failure, self.frames or ()), **counters))


def _file(target: UsageScope | None, record: ObservedRequest) -> None:
    if target is not None:
        target.file(record)


class RecordingTransport(httpx.AsyncBaseTransport):
    """An httpx transport that observes every exchange for the current `UsageScope`, removes
    `secrets` (the credentials in use) from every response body before any library reads it and,
    given a `gate`, sends each request in its turn."""

    def __init__(self, inner: httpx.AsyncBaseTransport | None = None, secrets: Iterable[str] = (),
                 gate: RequestGate | None = None) -> None:
        self._inner = inner or httpx.AsyncHTTPTransport(retries=0)
        self._secrets = secret_forms(secrets)
        self._gate = gate

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        turn = await _Turn.take(self._gate)
        target = current_scope()
        started_at = datetime.now(UTC)
        compression = bool(_FORCED_TOOL.search(request.content)) if request.method == "POST" else False
        try:
            response = await self._inner.handle_async_request(request)
        except _FAILURES as exc:  # no response: refused, timed out, reset, or cancelled while waiting
            error, failure = _failure(exc)
            _file(target, ObservedRequest(started_at=started_at, finished_at=datetime.now(UTC), status=None,
                                          success=False, streamed=False, compression=compression,
                                          failure=request_failure(error, failure, caller_frames(__file__))))
            await turn.give_back()
            raise
        streamed = response.headers.get("content-type", "").startswith("text/event-stream")
        validate = request.method == "POST" and request.url.path.rstrip("/").endswith("/chat/completions")
        pending = _PendingRecord(target, response.status_code, streamed, compression, started_at, validate)
        if not pending.ok_status:  # known failed now, while the stack of the code that asked is here
            pending.fail()
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _ObservedStream(response.stream, pending, Scrubber(self._secrets), turn)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()

