"""What the libraries may read of a model's response, fixed at the seam where the bytes enter
(`mobilemem.usage.RecordingTransport` applies it): the credentials in use are removed, verbatim,
base64 and URL-encoded, also from streamed text deltas where an echoed key arrives split across
events; and a partially reported `usage`, which the libraries would reject, is hidden (the
observed record keeps what was reported)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote


REDACTED = b"[redacted]"


def secret_forms(secrets: Iterable[str]) -> tuple[bytes, ...]:
    """Each credential as it could come back: verbatim, base64 and URL-encoded; longest first."""
    forms = set()
    for secret in secrets:
        if secret:
            raw = secret.encode("utf-8")
            forms |= {raw, base64.b64encode(raw), quote(secret, safe="").encode("ascii")}
    return tuple(sorted(forms, key=len, reverse=True))


class Scrubber:
    """Removes `forms` from a byte stream fed in chunks, also where one spans two chunks: the
    last `len(longest) - 1` bytes wait for the next chunk (or `flush`)."""

    def __init__(self, forms: tuple[bytes, ...]) -> None:
        self.forms = self._forms = forms
        self._keep = max((len(f) for f in forms), default=1) - 1
        self._pending = b""

    def _clean(self, data: bytes) -> bytes:
        for form in self._forms:
            data = data.replace(form, REDACTED)
        return data

    def feed(self, chunk: bytes) -> bytes:
        if not self._forms:
            return chunk
        data = self._clean(self._pending + chunk)
        cut = max(0, len(data) - self._keep)
        self._pending = data[cut:]
        return data[:cut]

    def flush(self) -> bytes:
        data, self._pending = self._clean(self._pending), b""
        return data

    def unread(self, data: bytes) -> None:
        self._pending = data + self._pending


def int_or_none(value: Any) -> int | None:
    """An integer counter as reported, or None (booleans are not counters)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _partial(usage: Any) -> bool:
    return isinstance(usage, dict) and not all(int_or_none(usage.get(k)) is not None
                                               for k in ("prompt_tokens", "completion_tokens"))


class StreamRewriter:
    """What the libraries read of a chat completion, fixed at the seam where the bytes enter:

    - a partially reported `usage` (e.g. prompt tokens only) is hidden, since the libraries would
      reject it and fail the step; the observed record keeps what was reported;
    - in a stream, the credentials are removed from the text deltas (content, reasoning, tool-call
      arguments), where a key the model echoes arrives split across events: each field's text is
      scrubbed as one stream, and what is held back is released with the choice's finish reason.
    A non-streamed body is looked at once, at its end (it is read whole anyway)."""

    _TEXT = ("content", "reasoning_content", "reasoning")

    def __init__(self, streamed: bool, forms: tuple[bytes, ...]) -> None:
        self._streamed = streamed
        self._forms = forms
        self._fields: dict[tuple, Scrubber] = {}
        self._buffer = b""

    def _scrub(self, key: tuple, text: str, final: bool) -> str:
        scrubber = self._fields.setdefault(key, Scrubber(self._forms))
        out = scrubber.feed(text.encode("utf-8"))
        if final:
            out += scrubber.flush()
        return out.decode("utf-8", "ignore") if final else _whole_chars(out, scrubber)

    def _choice(self, choice: dict) -> None:
        delta, index, final = choice.get("delta"), choice.get("index", 0), bool(choice.get("finish_reason"))
        if not isinstance(delta, dict):
            return
        for name in self._TEXT:
            if isinstance(delta.get(name), str) or (final and (index, name) in self._fields):
                delta[name] = self._scrub((index, name), delta.get(name) or "", final)
        calls = delta.get("tool_calls") if isinstance(delta.get("tool_calls"), list) else []
        seen = set()
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                seen.add(call.get("index"))
                function["arguments"] = self._scrub((index, "call", call.get("index")), function["arguments"], final)
        held = [key[2] for key in self._fields if final and key[:2] == (index, "call") and key[2] not in seen]
        for call_index in held:  # arguments held back at the end of a call: released with the finish
            rest = self._scrub((index, "call", call_index), "", final=True)
            if rest:
                delta["tool_calls"] = [*calls, {"index": call_index, "function": {"arguments": rest}}]
                calls = delta["tool_calls"]

    def _event(self, data: dict) -> dict:
        if _partial(data.get("usage")):
            data["usage"] = None
        if self._streamed and self._forms:
            for choice in data.get("choices") if isinstance(data.get("choices"), list) else []:
                if isinstance(choice, dict):
                    self._choice(choice)
        return data

    def _line(self, line: bytes) -> bytes:
        head, _, payload = line.partition(b"data:")
        if head.strip() or not payload.strip() or payload.strip() == b"[DONE]":
            return line
        try:
            data = json.loads(payload)
        except ValueError:
            return line
        if not isinstance(data, dict):
            return line
        return b"data: " + json.dumps(self._event(data), ensure_ascii=False).encode() + (
            b"\n" if line.endswith(b"\n") else b"")

    def feed(self, chunk: bytes) -> bytes:
        self._buffer += chunk
        if not self._streamed:
            return b""
        *lines, self._buffer = self._buffer.split(b"\n")
        return b"".join(self._line(line + b"\n") for line in lines)

    def flush(self) -> bytes:
        data, self._buffer = self._buffer, b""
        if self._streamed:
            return self._line(data) if data else b""
        try:
            body = json.loads(data)
        except ValueError:
            return data
        return json.dumps(self._event(body), ensure_ascii=False).encode() if isinstance(body, dict) else data


def _whole_chars(data: bytes, scrubber: Scrubber) -> str:
    """`data` as text; an incomplete UTF-8 sequence at its end goes back to wait for its rest."""
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            text = data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
        scrubber.unread(data[cut:])
        return text
    return data.decode("utf-8", "ignore")
