"""Judge rubrics, filled exactly as MemBase fills them (DESIGN §7).

Gold answers: a single answer as its plain string, several as `"[" + ", ".join(answers) + "]"`.
Evidence: each item's `explanation` through `str()` (a dict shows as its Python repr, as in
MemBase), joined by newlines; no evidence gives `Not provided.`
"""

from __future__ import annotations

import hashlib
import string
from functools import cache
from importlib import resources

from mobilemem.dataset import JudgeQuestion

DEFAULT_RUBRIC = "mobilemem-omni-judge"
RUBRICS = ("mobilemem-omni-judge", "mobilemem-llm-judge")
NO_EVIDENCE = "Not provided."


@cache
def rubric_text(name: str) -> str:
    if name not in RUBRICS:
        raise KeyError(f"unknown judge rubric {name!r}; known: {', '.join(RUBRICS)}")
    return resources.files("mobilemem_judge").joinpath("rubrics", f"{name}.txt").read_text(encoding="utf-8")


def rubric_sha256(name: str) -> str:
    return hashlib.sha256(rubric_text(name).encode("utf-8")).hexdigest()


def golden_answers(answer: str | list[str]) -> str:
    return answer if isinstance(answer, str) else "[" + ", ".join(answer) + "]"


def evidence_text(evidence: list[dict]) -> str:
    lines = [str(item["explanation"]) if "explanation" in item else str(item) for item in evidence]
    return "\n".join(lines) if lines else NO_EVIDENCE


def fill(name: str, question: JudgeQuestion, prediction: str) -> str:
    """The judge prompt for one answer: only question, references, evidence and the answer."""
    values = {"question": question.question, "golden_answers": golden_answers(question.answer),
              "evidence": evidence_text(question.evidence), "prediction": prediction}
    if name == "mobilemem-llm-judge":
        text = rubric_text(name)
        for placeholder, key in (("[Question]", "question"), ("[Gold Answer]", "golden_answers"),
                                 ("[Evidences]", "evidence"), ("[Generated Answer]", "prediction")):
            text = text.replace(placeholder, values[key], 1)
        return text
    return string.Template(rubric_text(name)).substitute(values)
