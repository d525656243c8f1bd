"""How the simulator reads a chat request (text, images, tool schemas) and reports usage.

Besides the request readers, this module owns the usage formula and where usage goes on the
wire (the ``chat.completion`` body, or the trailing stream chunk). The formula is a pure function
of the request body and the reply (also stated in ``policy``'s docstring), so tests can
recompute it by hand:

- request text = every message's text (a string ``content``, or the ``text`` of each
  ``{"type": "text"}`` part) plus, for assistant messages, each tool call's function name and
  arguments string; plus ``json.dumps(body["tools"], ensure_ascii=False)`` when tools are sent;
- ``prompt_tokens = ceil(utf8_bytes(request text) / 4) + 256 * image parts`` (an image part is a
  content part of type ``image_url``; its URL is never counted as text);
- ``completion_tokens = ceil(utf8_bytes(reply content + every tool call's name + arguments) / 4)
  + reasoning_tokens``;
- ``reasoning_tokens = 8`` when the body has a top-level ``enable_thinking: true``, else 0 (and
  ``completion_tokens_details`` is then left out);
- ``prompt_tokens_details.cached_tokens = 0``; ``total_tokens = prompt + completion``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .policy import Completion

IMAGE_TOKENS = 256
REASONING_TOKENS = 8


def content_parts(content: Any) -> list[dict]:
    """A message ``content`` as a list of parts (a plain string becomes one text part)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [part for part in content if isinstance(part, dict)]
    return []


def message_text(message: dict) -> str:
    """The text parts of one message, joined by newlines (images and tool calls left out)."""
    texts = [p.get("text") for p in content_parts(message.get("content")) if p.get("type") == "text"]
    return "\n".join(t for t in texts if isinstance(t, str))


def image_urls(message: dict) -> list[str]:
    """The URLs of the ``image_url`` parts of one message, in order."""
    urls = []
    for part in content_parts(message.get("content")):
        if part.get("type") == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            urls.append(url if isinstance(url, str) else "")
    return urls


def tool_calls_of(message: dict) -> Iterator[tuple[str, str]]:
    """``(name, arguments)`` of each tool call an assistant message carries."""
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            yield str(function.get("name") or ""), str(function.get("arguments") or "")


def messages_of(body: dict) -> list[dict]:
    messages = body.get("messages")
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def tool_names(body: dict) -> list[str]:
    return [name for tool in body.get("tools") or [] if (name := _function(tool).get("name"))]


def tool_schema(body: dict, name: str) -> dict:
    """The ``parameters`` schema of the offered tool ``name`` (``{}`` when not offered)."""
    for tool in body.get("tools") or []:
        if _function(tool).get("name") == name:
            params = _function(tool).get("parameters")
            return params if isinstance(params, dict) else {}
    return {}


def _function(tool: Any) -> dict:
    function = tool.get("function") if isinstance(tool, dict) else None
    return function if isinstance(function, dict) else {}


def types_of(prop: dict) -> set[str]:
    kinds = prop.get("type")
    found = set(kinds) if isinstance(kinds, list) else {kinds} if kinds else set()
    for variant in prop.get("anyOf") or prop.get("oneOf") or []:
        found |= types_of(variant) if isinstance(variant, dict) else set()
    return found - {None}


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def prompt_tokens(body: dict) -> int:
    size, images = 0, 0
    for message in messages_of(body):
        size += _bytes(message_text(message))
        size += sum(_bytes(name) + _bytes(args) for name, args in tool_calls_of(message))
        images += len(image_urls(message))
    if body.get("tools"):
        size += _bytes(json.dumps(body["tools"], ensure_ascii=False))
    return math.ceil(size / 4) + IMAGE_TOKENS * images


def usage_for(body: dict, content: str, tool_calls: Sequence[dict]) -> dict:
    """The OpenAI ``usage`` object for answering ``body`` with ``content`` and ``tool_calls``."""
    reasoning = REASONING_TOKENS if body.get("enable_thinking") is True else 0
    size = _bytes(content) + sum(_bytes(c["name"]) + _bytes(c["arguments"]) for c in tool_calls)
    prompt = prompt_tokens(body)
    completion = math.ceil(size / 4) + reasoning
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    if reasoning:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return usage


# -- the reply on the wire: where usage goes ---------------------------------------------------

def _meta(request_id: int, created: float, body: dict) -> dict:
    model = body.get("model") if isinstance(body.get("model"), str) else "simulator"
    return {"id": f"chatcmpl-sim-{request_id}", "created": int(created), "model": model}


def _tool_calls(request_id: int, completion: Completion) -> list[dict]:
    return [{"id": f"call_{request_id}_{i}", "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}}
            for i, c in enumerate(completion.tool_calls)]


def completion_payload(request_id: int, created: float, body: dict, completion: Completion) -> dict:
    """A non-streamed ``chat.completion`` body; it always carries ``usage``."""
    message: dict[str, Any] = {"role": "assistant", "content": completion.content}
    if completion.tool_calls:
        message["content"] = completion.content or None
        message["tool_calls"] = _tool_calls(request_id, completion)
    choice = {"index": 0, "message": message, "finish_reason": completion.finish_reason}
    meta = _meta(request_id, created, body)
    return {**meta, "object": "chat.completion", "choices": [choice], "usage": completion.usage}


def _split(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i:i + size] for i in range(0, len(text), size)]


def wants_usage(body: dict) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def stream_events(request_id: int, created: float, body: dict, completion: Completion) -> list[dict]:
    """The chunks of a streamed reply: role, content in pieces, each tool call (id and name, then
    its arguments in two pieces), the finish reason, then a ``choices: []`` chunk with ``usage``
    only when ``stream_options.include_usage`` is true."""
    meta = {**_meta(request_id, created, body), "object": "chat.completion.chunk"}

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**meta, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in _split(completion.content, 3)]
    for i, call in enumerate(_tool_calls(request_id, completion)):
        head = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
        events.append(chunk({"tool_calls": [{"index": i, **head}]}))
        args = call["function"]["arguments"]
        for piece in (args[:len(args) // 2], args[len(args) // 2:]):
            events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    events.append(chunk({}, completion.finish_reason))
    if wants_usage(body):
        events.append({**meta, "choices": [], "usage": completion.usage})
    return events
