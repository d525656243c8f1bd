"""What a model's response body says, read as it arrives (`mobilemem.transport` feeds it): the usage
counters, the finish reason, and whether it is a complete, valid chat completion. For a stream
that is a chunk with a finish reason or `[DONE]`; otherwise a JSON object whose `choices` carry a
message."""

from __future__ import annotations

import json
from typing import Any

from mobilemem.failure_kinds import FailureKind
from mobilemem.response_rewrite import int_or_none

_MAX_JSON_BODY = 64 * 1024 * 1024


class BodyParser:
    """Extracts usage and finish reason from a JSON body or an SSE stream, fed chunk by chunk."""

    def __init__(self, streamed: bool) -> None:
        self.streamed = streamed
        self.usage: dict[str, Any] | None = None
        self.finish_reason: str | None = None
        self.done = False
        self.malformed = False
        self.completion = False  # a non-streamed body was a chat completion (choices with a message)
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
        choices = data.get("choices")
        if not self.streamed:
            self.completion = isinstance(choices, list) and bool(choices) and all(
                isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices)
        for choice in choices if isinstance(choices, list) else []:
            if isinstance(choice, dict) and choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def finish(self) -> None:
        if self.streamed:
            self._line(bytes(self._buffer).strip())
        elif self._buffer:
            self._object(bytes(self._buffer))
        self._buffer = bytearray()

    def problem(self) -> tuple[str, str] | None:
        """(reason, category) when a completely read body is not a complete, valid chat completion."""
        if self.malformed:
            return "the response body is not valid JSON", FailureKind.MALFORMED
        if self.streamed and not (self.done or self.finish_reason):
            return "the stream ended without a finish reason or [DONE]", FailureKind.BROKEN_STREAM
        if not self.streamed and not self.completion:
            return "the response body is not a chat completion", FailureKind.MALFORMED
        return None

    def counters(self) -> dict[str, int | None]:
        usage = self.usage or {}
        completion_details = usage.get("completion_tokens_details") or {}
        prompt_details = usage.get("prompt_tokens_details") or {}
        return {
            "prompt_tokens": int_or_none(usage.get("prompt_tokens")),
            "completion_tokens": int_or_none(usage.get("completion_tokens")),
            "total_tokens": int_or_none(usage.get("total_tokens")),
            "reasoning_tokens": int_or_none(completion_details.get("reasoning_tokens")) if isinstance(
                completion_details, dict) else None,
            "cached_tokens": int_or_none(prompt_details.get("cached_tokens")) if isinstance(prompt_details, dict) else None,
        }
