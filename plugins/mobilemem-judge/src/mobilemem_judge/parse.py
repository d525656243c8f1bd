"""Reading a label out of the judge's reply (DESIGN §7), in four steps, recording which decided.

1. the whole stripped reply is JSON with a `label`;
2. else the first fenced or bare JSON object in the reply that has a `label`;
3. else words: `WRONG` or `INCORRECT` as a word gives WRONG, else `CORRECT` as a word gives CORRECT
   (MemBase's substring rule would read `INCORRECT` as correct; this does not);
4. else unparseable: a judge gap, never a score of 0.
"""

from __future__ import annotations

import json
import re
from pydantic import BaseModel, ConfigDict

from mobilemem.records import DecidedBy, Label

PARSER_VERSION = 1
_DECODER = json.JSONDecoder()
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_WRONG = re.compile(r"\b(?:WRONG|INCORRECT)\b", re.IGNORECASE)
_CORRECT = re.compile(r"\bCORRECT\b", re.IGNORECASE)


class ParsedLabel(BaseModel):
    model_config = ConfigDict(frozen=True)
    label: Label | None
    decided_by: DecidedBy | None


def _label_of(value: object) -> Label | None:
    if isinstance(value, dict) and isinstance(value.get("label"), str):
        label = value["label"].strip().upper()
        if label in ("CORRECT", "WRONG"):
            return label  # type: ignore[return-value]
    return None


def _whole(text: str) -> Label | None:
    try:
        return _label_of(json.loads(text))
    except ValueError:
        return None


def _embedded(text: str) -> Label | None:
    candidates = [(m.start(), m.group(1).strip()) for m in _FENCE.finditer(text)]
    for index in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            value, end = _DECODER.raw_decode(text, index)
        except ValueError:
            continue
        candidates.append((index, text[index:end]))
    for _, candidate in sorted(candidates, key=lambda pair: pair[0]):
        label = _whole(candidate)
        if label:
            return label
    return None


def parse_label(raw: str | None) -> ParsedLabel:
    text = (raw or "").strip()
    if label := _whole(text):
        return ParsedLabel(label=label, decided_by="json")
    if label := _embedded(text):
        return ParsedLabel(label=label, decided_by="embedded_json")
    if _WRONG.search(text):
        return ParsedLabel(label="WRONG", decided_by="words")
    if _CORRECT.search(text):
        return ParsedLabel(label="CORRECT", decided_by="words")
    return ParsedLabel(label=None, decided_by=None)
