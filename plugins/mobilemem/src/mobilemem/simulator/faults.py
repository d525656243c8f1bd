"""Fault rules: which requests misbehave, and how a faulty completion looks.

A rule hits requests of its ``role`` (``"*"`` = any) whose raw body text contains ``contains``,
at most ``times`` times (``None`` = every match). The first rule that still has hits left wins.
HTTP-level kinds (``http_500``, ``http_429``, ``timeout``, ``reset``, ``malformed``) are carried
out by the server; ``rewrite`` turns a policy completion into the faulty one for the others.
``many_tool_calls`` makes one answer reply carry ``calls`` ``bm25_search`` calls at once (a model
that floods its tools). ``wrong_answer`` leaves an answer's tool calls alone and replaces its final
text with ``WRONG_ANSWER``, which the judge labels WRONG: a run with chosen questions answered wrongly
(match each question's text with ``contains``). ``text`` replaces a final reply's text with the
rule's ``text`` (a judge that answers in words, say).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from . import policy
from .usage_rules import tool_names

HTTP_KINDS = frozenset({"http_500", "http_429", "http_401_echo", "timeout", "reset", "malformed"})
REPLY_KINDS = frozenset({"empty_reply", "invalid_tool_args", "unknown_tool", "endless_tool_calls", "truncated",
                         "tool_call", "wrong_answer", "text", "many_tool_calls"})
KINDS = HTTP_KINDS | REPLY_KINDS
ROLES = frozenset({"ingest", "answer", "judge", "compression", "qa", "plain", "*"})
TRUNCATED_WORDS = 3
WRONG_ANSWER = "I believe it was something else entirely."


@dataclass(frozen=True)
class FaultRule:
    role: str
    contains: str
    kind: str
    times: int | None = None
    delay_s: float = 30.0
    tool: str = ""  # kind "tool_call": call this tool ...
    arguments: str = ""  # ... with these raw arguments (hostile paths, huge text, anything)
    text: str = ""  # kind "text": the final reply's text
    calls: int = 10_000  # kind "many_tool_calls": this many calls in one reply

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {', '.join(sorted(KINDS))}")
        if self.role not in ROLES:
            raise ValueError(f"unknown fault role {self.role!r}; expected one of {', '.join(sorted(ROLES))}")
        if self.calls < 1:
            raise ValueError(f"calls must be >= 1, got {self.calls}")
        if self.times is not None and self.times < 0:
            raise ValueError(f"times must be >= 0 or None, got {self.times}")


class FaultTable:
    """Rules plus how often each has hit; thread-safe."""

    def __init__(self, rules: Sequence[FaultRule] = ()) -> None:
        self._lock = threading.Lock()
        self._rules = list(rules)
        self._hits = [0] * len(self._rules)

    @property
    def rules(self) -> list[FaultRule]:
        with self._lock:
            return list(self._rules)

    def select(self, role: str, *texts: str) -> FaultRule | None:
        """The first rule for ``role`` contained in any of ``texts`` that has hits left (counted)."""
        with self._lock:
            for i, rule in enumerate(self._rules):
                if rule.role not in ("*", role) or not any(rule.contains in text for text in texts):
                    continue
                if rule.times is not None and self._hits[i] >= rule.times:
                    continue
                self._hits[i] += 1
                return rule
        return None


def main_tool(role: str, body: dict) -> str:
    """The tool a role mainly calls (the forced one for compression, else the first offered)."""
    if role == "compression":
        return body["tool_choice"]["function"]["name"]
    wanted = {"ingest": "daily_write", "answer": "bm25_search"}.get(role)
    names = tool_names(body)
    return wanted if wanted in names else (names[0] if names else "no_tool_offered")


def rewrite(kind: str | None, role: str, body: dict, completion: policy.Completion,
            rule: FaultRule | None = None) -> policy.Completion:
    """The completion a reply-level fault sends instead of ``completion`` (unchanged otherwise)."""
    final = body.get("tool_choice") == "none"
    if kind == "empty_reply":
        return policy.complete(body, "", finish_reason="stop")
    if kind == "invalid_tool_args":
        return policy.complete(body, tool_calls=[{"name": main_tool(role, body), "arguments": '{"query": '}])
    if kind == "tool_call" and rule is not None and not final:
        return policy.complete(body, tool_calls=[{"name": rule.tool, "arguments": rule.arguments}])
    if kind == "text" and rule is not None and not completion.tool_calls:
        return policy.complete(body, rule.text)
    if kind == "unknown_tool":
        return policy.complete(body, tool_calls=[{"name": "no_such_tool", "arguments": "{}"}])
    if kind == "many_tool_calls" and role == "answer" and not final and rule is not None and rule.calls:
        return policy.complete(body, tool_calls=policy.search_call(body).tool_calls * rule.calls)
    if kind == "endless_tool_calls" and not final:
        if role == "answer":
            return policy.search_call(body)
        if role == "ingest":
            return policy.ingest_call(body)
    if kind == "wrong_answer" and role == "answer" and not completion.tool_calls:
        return policy.complete(body, WRONG_ANSWER)
    if kind == "truncated":
        words = completion.content.split()
        cut = " ".join(words[:TRUNCATED_WORDS]) if len(words) > TRUNCATED_WORDS \
            else completion.content[:len(completion.content) // 2]
        return policy.complete(body, cut, finish_reason="length")
    return completion
