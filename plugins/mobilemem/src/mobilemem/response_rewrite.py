"""What the libraries may read of a model's response, fixed at the seam where the bytes enter
(`mobilemem.transport.RecordingTransport` applies it): the credentials in use are removed, and a
partially reported `usage`, which the libraries would reject, is hidden (the observed record
keeps what was reported).

A credential is removed in every form a provider may send back: verbatim, base64 and
URL-encoded (either case of hex), each of them also written with JSON escapes (`\\/`, `\\uXXXX`
in any case, for any of its characters). The raw bytes are scrubbed first; then what a library
decodes is scrubbed again: a JSON body (and each streamed event) is decoded, every string in it,
keys and values, is scrubbed (so a form escaped once more, inside a string that is JSON itself
such as tool-call arguments, goes too), and the body is re-encoded. Text deltas of a stream,
where an echoed key arrives split across events, are scrubbed per field as one stream. A body
that is not JSON (an error page, plain text) gets the byte scrubbing only."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote


REDACTED = b"[redacted]"
# A match takes the run of backslashes before it: the pairs are kept, an odd one goes with the
# match, since it begins an escape that the match would otherwise cut in two (the bytes
# `\\u0073k-...` are the key written in JSON inside a JSON string: replaced whole, both levels
# stay valid JSON).
_BACKSLASHES = rb"(?<!\\)(?P<pairs>(?:\\\\)*)\\?"
_REPLACEMENT = rb"\g<pairs>" + REDACTED
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                  "\t": "\\t"}


def _unit(code: int) -> str:
    """The regex of `\\uXXXX` for one UTF-16 code unit, its hex digits in either case."""
    return r"\\u" + "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{code:04x}")


def _character(char: str) -> tuple[str, int]:
    """The regex of one character as JSON may write it, and the longest such writing in bytes."""
    code = ord(char)
    if code > 0xFFFF:  # a surrogate pair
        escaped = _unit(0xD800 + ((code - 0x10000) >> 10)) + _unit(0xDC00 + ((code - 0x10000) & 0x3FF))
    else:
        escaped = _unit(code)
    # escapes first: in raw JSON a backslash always begins one (`\\` is one backslash, not two)
    short = [re.escape(_SHORT_ESCAPES[char])] if char in _SHORT_ESCAPES else []
    options = [escaped, *short, re.escape(char)]
    return "(?:" + "|".join(options) + ")", max(len(char.encode("utf-8")), 12 if code > 0xFFFF else 6)


def _plain_forms(secret: str) -> set[str]:
    url = quote(secret, safe="")
    return {secret, base64.b64encode(secret.encode("utf-8")).decode("ascii"), url,
            re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), url)}


@dataclass(frozen=True)
class SecretForms:
    """Every form of the credentials in use, as one bytes regex; `longest` bounds a match's size."""

    pattern: re.Pattern[bytes] | None = None
    longest: int = 0

    def __bool__(self) -> bool:
        return self.pattern is not None

    def scrub(self, data: bytes) -> bytes:
        return self.pattern.sub(_REPLACEMENT, data) if self.pattern is not None else data

    def scrub_text(self, text: str) -> str:
        if self.pattern is None:
            return text
        data = text.encode("utf-8", "surrogatepass")
        cleaned = self.pattern.sub(_REPLACEMENT, data)
        return text if cleaned == data else cleaned.decode("utf-8", "surrogatepass")


def secret_forms(secrets: Iterable[str]) -> SecretForms:
    """Each credential as it could come back (module docstring); longest plain form first."""
    plain = sorted({form for secret in secrets if secret for form in _plain_forms(secret)}, key=len, reverse=True)
    if not plain:
        return SecretForms()
    patterns, longest = [], 0
    for form in plain:
        characters = [_character(char) for char in form]
        patterns.append("".join(regex for regex, _ in characters))
        longest = max(longest, sum(size for _, size in characters))
    return SecretForms(re.compile(_BACKSLASHES + b"(?:" + "|".join(patterns).encode("utf-8") + b")"), longest)


def scrub_strings(value: Any, forms: SecretForms) -> Any:
    """`value` (decoded JSON) with every string in it, keys and values at any depth, scrubbed;
    containers are changed in place, without recursion (a deeply nested body cannot overflow)."""
    if isinstance(value, str):
        return forms.scrub_text(value)
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    node[i] = forms.scrub_text(item)
                elif isinstance(item, (list, dict)):
                    stack.append(item)
        elif isinstance(node, dict):
            items = list(node.items())
            node.clear()
            for key, item in items:
                if isinstance(item, str):
                    item = forms.scrub_text(item)
                elif isinstance(item, (list, dict)):
                    stack.append(item)
                node[forms.scrub_text(key)] = item
    return value


class Scrubber:
    """Removes `forms` from a byte stream fed in chunks, also where one spans two chunks: the
    last `forms.longest - 1` bytes wait for the next chunk (or `flush`), and so does a run of
    backslashes before them (it may begin the escape of what follows)."""

    def __init__(self, forms: SecretForms) -> None:
        self.forms = self._forms = forms
        self._keep = max(forms.longest - 1, 0)
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        if not self._forms:
            return chunk
        data = self._forms.scrub(self._pending + chunk)
        cut = max(0, len(data) - self._keep)
        cut = len(data[:cut].rstrip(b"\\"))
        self._pending = data[cut:]
        return data[:cut]

    def flush(self) -> bytes:
        data, self._pending = self._forms.scrub(self._pending), b""
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
      scrubbed as one stream, and what is held back is released with the choice's finish reason;
    - every string of each decoded event, or of a non-streamed JSON body, is scrubbed whole.
    A non-streamed body is held back until its end (it is read whole anyway, and bounded by the
    transport) and handed on decoded, scrubbed and re-encoded; one that is not JSON goes on as it is."""

    _TEXT = ("content", "reasoning_content", "reasoning")

    def __init__(self, streamed: bool, forms: SecretForms) -> None:
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
            if not (final and any(key[0] == index for key in self._fields)):
                return
            delta = choice["delta"] = {}  # a finish without a delta still releases what is held back
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

    def _event(self, data: Any) -> Any:
        if not isinstance(data, dict):
            return scrub_strings(data, self._forms)
        if _partial(data.get("usage")):
            data["usage"] = None
        if self._streamed and self._forms:
            for choice in data.get("choices") if isinstance(data.get("choices"), list) else []:
                if isinstance(choice, dict):
                    self._choice(choice)
        return scrub_strings(data, self._forms)

    @staticmethod
    def _decoded(data: bytes) -> tuple[bool, Any]:
        try:
            return True, json.loads(data)
        except (ValueError, RecursionError):  # not JSON: no library decodes it
            return False, None

    def _line(self, line: bytes) -> bytes:
        head, _, payload = line.partition(b"data:")
        if head.strip() or not payload.strip() or payload.strip() == b"[DONE]":
            return line
        decoded, data = self._decoded(payload)
        if not decoded:
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
        decoded, body = self._decoded(data)
        return json.dumps(self._event(body), ensure_ascii=False).encode() if decoded else data


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
