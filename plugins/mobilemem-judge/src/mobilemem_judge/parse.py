"""Reading a label out of the judge's reply (DESIGN §7), in four steps, recording which decided.

1. the whole stripped reply is JSON with a `label`;
2. else the first fenced or bare JSON object in the reply that has a `label` (a judge that reasons
   in words and ends with its JSON verdict means the JSON, whatever its words said);
3. else words, read case-insensitively, each giving a verdict or none:
   - WRONG: the words `WRONG`, `INCORRECT` or `INACCURATE`, or a negated `CORRECT`, `RIGHT` or
     `ACCURATE`: after `not`, `never`, `no`, `nothing`, `neither`, `nor`, `cannot` or an `n't`
     contraction (`isn't`, `doesn't`), with at most three of these words between them and nothing
     else, not even a comma: a, an, the, be, been, is, are, was, were, seem(s), appear(s),
     look(s), to, at, all, quite, entirely, fully, completely, totally, wholly, exactly, strictly,
     really, actually, necessarily, very, so, considered, deemed, judged, graded, marked
     ("is not correct", "isn't quite right", "does not appear to be accurate");
   - CORRECT: the word `CORRECT`, not negated;
   - none: `RIGHT` and `ACCURATE` on their own (too often about something else: "on the right"),
     a negated `WRONG`/`INCORRECT`/`INACCURATE` (a double negative, "not wrong", is not read),
     `FALSE` (as often about a detail of the answer as about the answer), words such as
     `CORRECTLY`, and the two labels named as alternatives ("CORRECT or WRONG", "correct/incorrect");
   only WRONG verdicts give WRONG, only CORRECT verdicts give CORRECT, and both are a judge gap
   (`AMBIGUOUS`: "The correct answer is red, so the reply is wrong" names both);
4. else unparseable (`UNPARSEABLE`): a judge gap, never a score of 0.
MemBase's substring rule would read `INCORRECT` (and "not correct") as correct; this does not.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict

from mobilemem.failure_kinds import FailureKind
from mobilemem.records import DecidedBy, Label

PARSER_VERSION = 2  # 2: negations, and words giving both verdicts are a gap
UNPARSEABLE = FailureKind.UNPARSEABLE
AMBIGUOUS = FailureKind.AMBIGUOUS
_DECODER = json.JSONDecoder()
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_NEGATOR = r"(?:not|never|no|nothing|neither|nor|cannot|\w+n['’]t)"
_BETWEEN = ("a|an|the|be|been|is|are|was|were|seems?|appears?|looks?|to|at|all|quite|entirely|fully|completely|"
            "totally|wholly|exactly|strictly|really|actually|necessarily|very|so|considered|deemed|judged|graded|"
            "marked")
_VERDICT_WORDS = re.compile(
    rf"(?P<negator>\b{_NEGATOR}(?:\s+(?:{_BETWEEN})){{0,3}}\s+)?"
    r"\b(?P<word>correct|right|accurate|wrong|incorrect|inaccurate)\b", re.IGNORECASE)
_ALTERNATIVES = re.compile(r"\b(?:correct|right)\s*(?:/|\bor\b)\s*(?:wrong|incorrect)\b"
                           r"|\b(?:wrong|incorrect)\s*(?:/|\bor\b)\s*(?:correct|right)\b", re.IGNORECASE)
_POSITIVE = frozenset({"correct", "right", "accurate"})


class ParsedLabel(BaseModel):
    """The label and the step that decided it; without a label, `gap` says why (`UNPARSEABLE`, or
    `AMBIGUOUS` when the words rule found both verdicts: then `decided_by` is `words`)."""

    model_config = ConfigDict(frozen=True)
    label: Label | None
    decided_by: DecidedBy | None
    gap: str | None = None


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


def word_verdicts(text: str) -> set[Label]:
    """The verdicts the words of `text` give (step 3)."""
    verdicts: set[Label] = set()
    for match in _VERDICT_WORDS.finditer(_ALTERNATIVES.sub(" ; ", text)):
        word, negated = match["word"].lower(), match["negator"] is not None
        if word in _POSITIVE and negated or word not in _POSITIVE and not negated:
            verdicts.add("WRONG")
        elif word == "correct" and not negated:
            verdicts.add("CORRECT")
    return verdicts


def parse_label(raw: str | None) -> ParsedLabel:
    text = (raw or "").strip()
    if label := _whole(text):
        return ParsedLabel(label=label, decided_by="json")
    if label := _embedded(text):
        return ParsedLabel(label=label, decided_by="embedded_json")
    verdicts = word_verdicts(text)
    if len(verdicts) > 1:
        return ParsedLabel(label=None, decided_by="words", gap=AMBIGUOUS)
    if verdicts:
        return ParsedLabel(label=verdicts.pop(), decided_by="words")
    return ParsedLabel(label=None, decided_by=None, gap=UNPARSEABLE)
