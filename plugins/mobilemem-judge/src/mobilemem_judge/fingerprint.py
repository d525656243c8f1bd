"""The judgment's fingerprint: what determines a label (the answer text, the question, its
references and evidence, and the judge settings of judge-settings.json), computed on the judge's
side of the boundary because it covers the references."""

from __future__ import annotations

from mobilemem.dataset import JudgeQuestion
from mobilemem.fingerprints import digest
from mobilemem.records import JudgeSettingsFile


# The records' schema version is not part of what was judged: the settings are hashed as version 1
# wrote them, so a judgment of a run before schema version 2 is still reused (issue 23).
SETTINGS_VERSION = 1


def judgment_fingerprint(question: JudgeQuestion, prediction: str, settings: JudgeSettingsFile) -> str:
    judged = {**settings.model_dump(mode="json", exclude={"model_from_env"}), "schema_version": SETTINGS_VERSION}
    return digest({"kind": "judgment", "question_id": question.question_id, "question": question.question,
                   "references": question.answer, "evidence": question.evidence, "prediction": prediction,
                   "settings": judged})
