"""A test-only hostile OpenAI-compatible endpoint: a real HTTP server on 127.0.0.1.

It answers like the simulator (its pure `policy`) but misbehaves on the requests a `Hostility`
selects (role + a substring of the request body), in ways a provider or a model really can:

- `html_200` / `text_200` / `not_a_completion`: 200 with an HTML page, plain text, or JSON that
  is not a chat completion;
- `no_terminal`: a stream that ends cleanly at the HTTP level with no finish reason and no `[DONE]`;
- `partial_usage`: a normal reply whose usage reports prompt tokens only;
- `echo_key`: the reply text carries the request's API key (verbatim, base64, URL-encoded);
  with `escapes`, the JSON on the wire writes the given characters as the given legal escapes
  (`\\/`, `\\u002F`, ...; each character's escapes used in turn), in every string of the body or
  event, and with `nested` also inside tool-call arguments (JSON in a JSON string);
- `trickle`: a body (streamed or not) that sends a few bytes every `interval_s` for ever (never a
  read timeout);
- `huge_answer`: a final text of `size` characters.
Every request is logged (role, hostility applied, status).
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from urllib.parse import quote

from hypothesis import strategies as st

from mobilemem.simulator import policy
from quiet_handler import QuietHandler
from mobilemem.simulator.usage_rules import completion_payload, stream_events

KINDS = ("html_200", "text_200", "not_a_completion", "no_terminal", "partial_usage", "echo_key", "trickle",
         "huge_answer")


@dataclass(frozen=True)
class Hostility:
    role: str  # "ingest", "answer", "judge", "compression" or "*"
    kind: str
    contains: str = ""
    interval_s: float = 0.5
    size: int = 200_000
    escapes: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (character, its escapes) for the JSON written
    nested: bool = False

    def hits(self, role: str, raw: str) -> bool:
        return self.role in ("*", role) and self.contains in raw


@dataclass
class Hostile:
    server: ThreadingHTTPServer
    rules: list[Hostility] = field(default_factory=list)
    log: list[tuple[str, str | None, int]] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"


def _hex(code: int) -> st.SearchStrategy[str]:
    digits = [st.sampled_from(sorted({d.lower(), d.upper()})) for d in f"{code:04x}"]
    return st.tuples(*digits).map(lambda ds: "\\u" + "".join(ds))


def _writings(char: str) -> st.SearchStrategy[str]:
    """Every legal JSON writing of one character (as itself where JSON allows, `\\/`, a short
    escape, `\\uXXXX` in any case, a surrogate pair above U+FFFF)."""
    code = ord(char)
    if code > 0xFFFF:
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        escaped = st.tuples(_hex(high), _hex(low)).map("".join)
    else:
        escaped = _hex(code)
    short = [json.dumps(char)[1:-1] if char in '"\\' or code < 0x20 else char] + (["\\/"] if char == "/" else [])
    return st.one_of(st.sampled_from(short), escaped)


def escapings(key: str) -> st.SearchStrategy[tuple[tuple[str, tuple[str, ...]], ...]]:
    """`Hostility.escapes` for `key`: one to three writings of each of its characters, used in turn."""
    chars = sorted(set(key))
    return st.tuples(*[st.lists(_writings(c), min_size=1, max_size=3).map(tuple) for c in chars]).map(
        lambda forms: tuple(zip(chars, forms)))


def key_forms(key: str) -> list[str]:
    url = quote(key, safe="")
    return [key, base64.b64encode(key.encode()).decode(), url, re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), url)]


def _unescaped(text: str) -> str:
    """`text` with its JSON escapes undone (`\\uXXXX`, `\\/`, `\\"`, `\\\\`), again and again
    until none is left: a key written escaped (even twice over) shows up as itself."""
    while True:
        out = re.sub(r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})",
                     lambda m: (chr(int(m[1], 16)) + chr(int(m[2], 16))).encode("utf-16", "surrogatepass")
                     .decode("utf-16"), text)
        out = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m[1], 16)), out)
        out = out.replace("\\/", "/").replace('\\"', '"').replace("\\\\", "\\")
        if out == text:
            return out
        text = out


def leaks(key: str, texts: Sequence[str]) -> list[str]:
    """The forms of `key` (verbatim, base64, URL-encoded) found in `texts`, as written or unescaped."""
    return [form for text in texts for seen in {text, _unescaped(text)} for form in key_forms(key) if form in seen]


def _echo(key: str) -> str:
    return f"My key is {key}, base64 {base64.b64encode(key.encode()).decode()}, url {quote(key, safe='')}."


class Escaper:
    """JSON text in which chosen characters of every string are written as chosen legal escapes."""

    def __init__(self, escapes: tuple[tuple[str, tuple[str, ...]], ...]) -> None:
        self._escapes = dict(escapes)
        self._used = dict.fromkeys(self._escapes, 0)

    def _string(self, text: str) -> str:
        out = []
        for char in text:
            forms = self._escapes.get(char)
            if forms:
                out.append(forms[self._used[char] % len(forms)])
                self._used[char] += 1
            else:
                out.append(json.dumps(char)[1:-1])
        return '"' + "".join(out) + '"'

    def dumps(self, value) -> str:
        if isinstance(value, str):
            return self._string(value)
        if isinstance(value, dict):
            return "{" + ", ".join(f"{self._string(k)}: {self.dumps(v)}" for k, v in value.items()) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(self.dumps(v) for v in value) + "]"
        return json.dumps(value)


def _dumps(value, rule: Hostility | None) -> str:
    return Escaper(rule.escapes).dumps(value) if rule is not None and rule.escapes else json.dumps(value)


def _completion(role: str, body: dict, rule: Hostility | None, key: str) -> policy.Completion:
    completion = policy.reply(role, body)
    if rule is None:
        return completion
    if rule.kind == "echo_key":  # into whatever the model writes: note content, final text, judge reply
        if completion.tool_calls:
            calls = [{**c, "arguments": c["arguments"].replace('"content": "', f'"content": "{_echo(key)} ', 1)}
                     for c in completion.tool_calls]
            if rule.nested:
                calls = [{**c, "arguments": _dumps(json.loads(c["arguments"]), rule)} for c in calls]
            return policy.complete(body, completion.content, calls)
        return policy.complete(body, f"{completion.content} {_echo(key)}")
    if rule.kind == "huge_answer" and not completion.tool_calls:
        return policy.complete(body, "The colour is red. " + "x" * rule.size)
    return completion


class _Handler(QuietHandler):

    def do_POST(self) -> None:  # noqa: N802
        hostile: Hostile = self.server.hostile  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8", "replace")
        body = json.loads(raw)
        role, _ = policy.classify(body)
        rule = next((r for r in hostile.rules if r.hits(role, raw)), None)
        key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        hostile.log.append((role, rule.kind if rule else None, 200))
        kind = rule.kind if rule else None
        if kind in ("html_200", "text_200", "not_a_completion"):
            data, ctype = {"html_200": (b"<html><body>Service maintenance</body></html>", "text/html"),
                           "text_200": (b"OK", "text/plain"),
                           "not_a_completion": (b'{"status": "ok", "result": "done"}', "application/json")}[kind]
            return self._send(data, ctype)
        completion = _completion(role, body, rule, key)
        if body.get("stream") is not True and kind == "trickle":
            return self._stream([json.dumps(completion_payload(1, time.time(), body, completion)).encode()], rule,
                                "application/json")
        if body.get("stream") is not True:
            payload = completion_payload(1, time.time(), body, completion)
            if kind == "partial_usage":
                payload["usage"] = {"prompt_tokens": completion.usage["prompt_tokens"]}
            return self._send(_dumps(payload, rule).encode(), "application/json")
        events = stream_events(1, time.time(), body, completion)
        if kind == "partial_usage":
            events = [e if "usage" not in e else {**e, "usage": {"prompt_tokens": e["usage"]["prompt_tokens"]}}
                      for e in events]
        frames = [f"data: {_dumps(e, rule)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]
        if kind == "no_terminal":
            frames = [f"data: {json.dumps(e)}\n\n".encode() for e in events
                      if not any(c.get("finish_reason") for c in e.get("choices") or [])]
        self._stream(frames, rule)

    def _send(self, data: bytes, ctype: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, frames: Sequence[bytes], rule: Hostility | None, ctype: str = "text/event-stream") -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            if rule is not None and rule.kind == "trickle":
                hostile: Hostile = self.server.hostile  # type: ignore[attr-defined]
                first = frames[0] if ctype == "text/event-stream" else frames[0][:1]
                self._chunk(first)
                while not hostile.stopping.wait(rule.interval_s):  # a byte now and then, never the end
                    self._chunk(b": still thinking\n\n" if ctype == "text/event-stream" else b" ")
                return
            for frame in frames:
                self._chunk(frame)
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


@contextmanager
def start_hostile(rules: Sequence[Hostility] = ()) -> Iterator[Hostile]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    hostile = Hostile(server, list(rules))
    server.hostile = hostile  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hostile
    finally:
        hostile.stopping.set()
        server.shutdown()
        server.server_close()
