"""Deterministic model policies of the simulator (DESIGN §9): pure functions, no sockets.

``classify(body)`` names the role of a chat request, in this order: a ``tool_choice`` forcing one
function → ``compression``; a message with the judge rubric's first sentence → ``judge``; a
``daily_write`` tool offered → ``ingest``; a ``bm25_search`` tool offered → ``answer``; no tool and
an official QA template (a baseline's one request, ``plain_qa``) → ``qa``; else ``plain``. ``final`` is ``tool_choice == "none"`` (the reply is then text only).
``reply(role, body)`` computes the answer. Tool and argument names are read from the request's
``tools`` schemas (preferring ``name``/``description``/``session_id``/``content``/``date``/``query``/``path`` when a
schema has them, otherwise its string parameters, required ones first), so the simulator drives
ReMe's own tools: ``daily_write`` gets the session id and date ReMe's prompt states, ``read_image``
the saved image path the notes cite.

Usage (see ``usage_rules``): ``prompt_tokens = ceil(UTF-8 bytes of all message text, tool-call
names and arguments, and json.dumps(tools, ensure_ascii=False) / 4) + 256 per image part``;
``completion_tokens = ceil(UTF-8 bytes of the reply content + tool-call names + arguments / 4)
+ reasoning``; ``reasoning_tokens = 8`` when the body has top-level ``enable_thinking: true``
(else 0, details omitted); ``cached_tokens = 0``; ``total_tokens = prompt + completion``.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import plain_qa
from .pixels import answer_about
from .usage_rules import (image_urls, message_text, messages_of, tool_calls_of, tool_names, tool_schema, types_of,
                          usage_for)

JUDGE_SENTENCE = "Your task is to classify an answer to a question as CORRECT or WRONG"
NOT_FOUND = "I could not find that in my memory."
MAX_KEY_WORDS = 60

_TURN = re.compile(r"^\[[^\]\n]* @ [^\]\n]*\]$", re.MULTILINE)  # ReMe's transcript: `[speaker @ time]`
_PROMPT_FIELD = re.compile(r"^(Session ID|Today): *(\S+)$", re.MULTILINE)
_IMAGE_PAIR = re.compile(r"^Image ID: (.+)\nImage source: \[\[([^\]\n]+)\]\]$", re.MULTILINE)
_SAVED_IMAGE = re.compile(r"session/images/[^\s\]\[()|]+?\.(?:png|jpe?g|webp|gif)", re.IGNORECASE)
_HIT = re.compile(r"^(?=\S+:\d+-\d+)", re.MULTILINE)
_CJK = "\u3400-\u4dbf\u4e00-\u9fff"
_WORD = re.compile(rf"[{_CJK}]+|[^\W\d_{_CJK}]{{4,}}")
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
_ORDINAL = re.compile(rf"\b({'|'.join(_ORDINALS)})\b|第([一二三四五六七八九十])张", re.IGNORECASE)
_PUNCTUATION = string.punctuation + "。，、！？；：“”‘’（）《》【】…·"


@dataclass(frozen=True)
class Completion:
    content: str
    tool_calls: tuple[dict, ...]  # {"name": str, "arguments": str (JSON text, maybe invalid)}
    finish_reason: str
    usage: dict


def complete(body: dict, content: str = "", tool_calls: Sequence[dict] = (),
             finish_reason: str | None = None) -> Completion:
    """A ``Completion`` with its finish reason defaulted and its usage computed."""
    calls = tuple({"name": c["name"], "arguments": c["arguments"]} for c in tool_calls)
    reason = finish_reason or ("tool_calls" if calls else "stop")
    return Completion(content, calls, reason, usage_for(body, content, calls))


def classify(body: dict) -> tuple[str, bool]:
    choice = body.get("tool_choice")
    final = choice == "none"
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict) and choice["function"].get("name"):
        return "compression", final
    if any(JUDGE_SENTENCE in message_text(m) for m in messages_of(body)):
        return "judge", final
    names = tool_names(body)
    if "daily_write" in names:
        return "ingest", final
    if "bm25_search" in names:
        return "answer", final
    if plain_qa.asks(body):
        return "qa", final
    return "plain", final


def reply(role: str, body: dict) -> Completion:
    final = body.get("tool_choice") == "none"
    if role == "compression":
        return _compression(body)
    if role == "judge":
        return complete(body, _judge(body))
    if role == "ingest":
        return _ingest(body, final)
    if role == "answer":
        return _answer(body, final)
    if role == "qa":
        return complete(body, plain_qa.answer(body, question_of(body), _ordinal(question_of(body))))
    return complete(body, "OK.")


# -- tools and their argument schemas ---------------------------------------------------------

def _default(prop: dict, text: str) -> Any:
    if "default" in prop:
        return prop["default"]
    if prop.get("enum"):
        return prop["enum"][0]
    kinds = types_of(prop) - {"null"}
    for kind, value in (("string", text), ("integer", prop.get("minimum", 0)), ("number", prop.get("minimum", 0)),
                        ("boolean", False), ("array", []), ("object", {})):
        if kind in kinds:
            return value
    return None if "null" in types_of(prop) else text


def fill_arguments(schema: dict, wanted: Sequence[tuple[str, Any]], filler: str = "") -> dict:
    """Arguments for a tool: each wanted ``(preferred name, value)`` goes to that property when
    the schema has it, else to the next free string property (required first, schema order);
    required properties left over get a default (strings get ``filler``)."""
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = [n for n in schema.get("required") or [] if n in props]
    order = required + [n for n in props if n not in required]
    preferred = {name for name, _ in wanted}
    free = [n for n in order if "string" in types_of(props[n]) and n not in preferred]
    args: dict[str, Any] = {}
    for name, value in wanted:
        if name in props:
            args[name] = value
        elif free:
            args[free.pop(0)] = value
    for name in required:
        args.setdefault(name, _default(props[name], filler))
    return args


def tool_call(body: dict, name: str, wanted: Sequence[tuple[str, Any]], filler: str = "") -> dict:
    args = fill_arguments(tool_schema(body, name), wanted, filler)
    return {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}


# -- conversation reading ---------------------------------------------------------------------

def key_words(text: str, limit: int = MAX_KEY_WORDS) -> list[str]:
    """Distinct words of four or more letters and CJK runs, first-seen order (case-insensitive)."""
    seen: dict[str, str] = {}
    for word in _WORD.findall(text):
        seen.setdefault(word.lower(), word)
        if len(seen) >= limit:
            break
    return list(seen.values())


def _called(body: dict, name: str) -> int:
    return sum(n == name for m in messages_of(body) if m.get("role") == "assistant" for n, _ in tool_calls_of(m))


def _tool_results(body: dict) -> list[tuple[str, str]]:
    """``(tool name, text)`` of every tool message, the name taken from the message or its call."""
    names = {c.get("id"): c.get("function", {}).get("name") for m in messages_of(body)
             for c in m.get("tool_calls") or [] if isinstance(c, dict)}
    return [(str(m.get("name") or names.get(m.get("tool_call_id")) or ""), message_text(m))
            for m in messages_of(body) if m.get("role") == "tool"]


def _received_images(body: dict) -> list[str]:
    return [url for m in messages_of(body) if m.get("role") != "system" for url in image_urls(m)]


# -- role policies ----------------------------------------------------------------------------

def _ingest(body: dict, final: bool) -> Completion:
    calls = _called(body, "daily_write")
    if calls or final:
        return complete(body, f"Saved {calls} note{'' if calls == 1 else 's'}.")
    return ingest_call(body)


def ingest_call(body: dict) -> Completion:
    """One ``daily_write`` call noting the session's key words and, for every image seen, its Image
    ID with the saved source ReMe cited; ``session_id`` and ``date`` are copied from ReMe's prompt."""
    text = "\n".join(message_text(m) for m in messages_of(body) if m.get("role") == "user")
    fields = dict(_PROMPT_FIELD.findall(text))
    turns = _session_text(text)
    words = key_words("\n".join(line for line in turns.splitlines()
                                if not line.startswith(("Image ID: ", "Image source: "))))
    images = list(dict.fromkeys(_IMAGE_PAIR.findall(text)))
    slug = "-".join(w.lower() for w in words[:3])[:60] or "session-note"
    description = f"Session notes: {', '.join(words[:6]) or 'no key words'}"
    content = "\n".join([f"Key words: {', '.join(words)}",
                         *(f"- Image ID: {image_id} (source: [[{source}]])" for image_id, source in images)])
    wanted = [("name", slug), ("description", description), ("content", content),
              ("session_id", fields.get("Session ID", "")), ("date", fields.get("Today", ""))]
    return complete(body, tool_calls=[tool_call(body, "daily_write", wanted)])


def _session_text(text: str) -> str:
    """The turns of ReMe's rendered conversation (``[speaker @ time]`` blocks), without the headers."""
    marks = list(_TURN.finditer(text))
    if not marks:
        return text
    end = text.find("\n# Your Task", marks[-1].end())
    return "\n".join(text[m.end():nxt].strip() for m, nxt in
                     zip(marks, [m.start() for m in marks[1:]] + [end if end > 0 else len(text)]))


def question_of(body: dict) -> str:
    """The question of an answer conversation: the first user message's lines after ``Question:``
    up to the line starting ``Please answer`` (the whole text when there is no such line)."""
    first = next((message_text(m) for m in messages_of(body) if m.get("role") == "user"), "")
    lines = first.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("Question:")), None)
    if start is None:
        return first.strip()
    picked = [lines[start].strip()[len("Question:"):]]
    for line in lines[start + 1:]:
        if line.strip().startswith("Please answer"):
            break
        picked.append(line)
    return "\n".join(picked).strip() or first.strip()


def search_call(body: dict) -> Completion:
    """Step 1 of the answer policy: ``bm25_search`` with the question's words."""
    query = " ".join(re.findall(r"\w+", question_of(body)))
    return complete(body, tool_calls=[tool_call(body, "bm25_search", [("query", query)])])


def _ordinal(question: str) -> int:
    match = _ORDINAL.search(question)
    if match is None:
        return 0
    if match.group(1):
        return _ORDINALS.index(match.group(1).lower())
    return "一二三四五六七八九十".index(match.group(2))


def _answer(body: dict, final: bool) -> Completion:
    results = _tool_results(body)
    tried_image = any(name == "read_image" for name, _ in results)
    if final or tried_image or _received_images(body):
        return complete(body, _answer_from_pixels(body))
    searches = [text for name, text in results if name == "bm25_search"]
    if not searches:
        return search_call(body)
    images = next((found for hit in _HIT.split(searches[-1]) if (found := _SAVED_IMAGE.findall(hit))), [])
    if not images:
        return complete(body, NOT_FOUND)
    image = list(dict.fromkeys(images))[min(_ordinal(question_of(body)), len(set(images)) - 1)]
    return complete(body, tool_calls=[tool_call(body, "read_image", [("path", image)])])


def _answer_from_pixels(body: dict) -> str:
    images = _received_images(body)
    return answer_about(question_of(body), images[-1] if images else None)


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower()).strip().strip(_PUNCTUATION).strip()


def _judge(body: dict) -> str:
    text = "\n".join(message_text(m) for m in messages_of(body) if JUDGE_SENTENCE in message_text(m))
    gold_line = re.search(r"^Gold answer: ?(.*)$", text, re.MULTILINE)
    start = re.search(r"^Generated answer: ?", text, re.MULTILINE)
    gold = gold_line.group(1).strip() if gold_line else ""
    generated = ""
    if start:
        end = text.rfind("\n\nReturn exactly")
        generated = text[start.end():end] if end > start.end() else text[start.end():]
    golds = gold[1:-1].split(", ") if gold.startswith("[") and gold.endswith("]") else [gold]
    answer = normalise(generated)
    correct = any(g and g in answer for g in map(normalise, golds))
    return json.dumps({"label": "CORRECT" if correct else "WRONG"})


def _compression(body: dict) -> Completion:
    name = body["tool_choice"]["function"]["name"]
    text = "\n".join(message_text(m) for m in messages_of(body) if m.get("role") != "system")
    summary = f"Conversation of {len(messages_of(body))} messages about: {', '.join(key_words(text, 20))}."
    schema = tool_schema(body, name)
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    wanted = [(p, summary) for p in props if "string" in types_of(props[p])]
    args = fill_arguments(schema, wanted, summary)
    for prop in props:
        args.setdefault(prop, _default(props[prop], summary))
    return complete(body, tool_calls=[{"name": name, "arguments": json.dumps(args, ensure_ascii=False)}])
