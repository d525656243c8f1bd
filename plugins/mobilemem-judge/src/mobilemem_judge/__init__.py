"""The isolated MobileMem judge: the only component that ever sees reference answers and evidence.

It imports the judge view of `mobilemem.dataset`, `mobilemem.records` and `mobilemem.models`,
never `mobilemem.candidate`; `mobilemem` never imports this package.
"""

from mobilemem_judge.fingerprint import judgment_fingerprint
from mobilemem_judge.judge import Judgment, judge_answer
from mobilemem_judge.parse import ParsedLabel, parse_label
from mobilemem_judge.rubric import DEFAULT_RUBRIC, RUBRICS, fill, rubric_sha256, rubric_text
from mobilemem_judge.settings import judge_settings

__all__ = [
    "DEFAULT_RUBRIC",
    "RUBRICS",
    "Judgment",
    "ParsedLabel",
    "fill",
    "judge_answer",
    "judge_settings",
    "judgment_fingerprint",
    "parse_label",
    "rubric_sha256",
    "rubric_text",
]
