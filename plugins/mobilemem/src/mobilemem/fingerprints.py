"""Fingerprints of what determines a result, so that a later run can tell whether an earlier run's
memory or answer is the one it would produce itself (issue 14: runs that build on earlier runs).

Each is the sha256 of a canonical JSON document (sorted keys, no whitespace) of its inputs:
- memory = the user's sessions as read (every turn's text, role and image id, path and format, and
  each image's content sha256), the candidate model and preset (without the answer-only settings),
  the ReMe and plugin provenance, every frozen text of the plugin, and whether the model was the
  simulator;
  A baseline (DESIGN §10) adds its kind and settings (`BASELINE_ONLY`); for ReMe Image they are
  left out, so its fingerprints are those of runs made before the baselines existed;
- answer = the memory fingerprint, the question text and the answer-only settings; one added
  later (`LATER_ANSWER_ONLY`, the tool-call cap) only when it is not at its default, so answers made
  before it existed keep their fingerprints (they made no more calls than the default cap unless a
  model flooded its tools).
The judgment's fingerprint is the judge's (mobilemem_judge.fingerprint): it covers references,
which the candidate side never sees. An image is identified by the sha256 of its bytes, which
preflight computes from the same read that it decodes (`Dataset.image_sha256`; its cost at full size
is in bench/README.md). VERSION 2 replaced version 1's image byte sizes with these hashes (two
images of one size but other pixels had one fingerprint): memories and answers of version 1 no
longer match and are made again. The rules above that keep earlier fingerprints hold within a version.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from mobilemem.records import CandidatePreset, CandidateProvenance, DEFAULT_KIND
from mobilemem.dataset import CandidateQuestion, ScheduledUser

VERSION = 2
ANSWER_ONLY = ("max_iters", "answer_timeout_s", "max_answer_bytes")
LATER_ANSWER_ONLY = ("max_tool_calls",)
BASELINE_ONLY = ("kind", "top_k", "chunk_turns")


def digest(document: Mapping[str, Any]) -> str:
    canonical = json.dumps({"fingerprint_version": VERSION, **document}, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def memory_fingerprint(user: ScheduledUser, images: Mapping[str, str], model: str, preset: CandidatePreset,
                       candidate: CandidateProvenance, frozen: Mapping[str, str], simulated: bool) -> str:
    """`images`: the sha256 of each of the user's images by dataset-relative path (`Dataset.images_of`)."""
    document = {
        "kind": "memory", "user_id": user.user_id, "language": user.language,
        "sessions": [s.model_dump(mode="json") for s in user.sessions],
        "image_sha256": dict(images), "model": model,
        "preset": preset.model_dump(mode="json", exclude={*ANSWER_ONLY, *LATER_ANSWER_ONLY, *BASELINE_ONLY}),
        "candidate": candidate.model_dump(mode="json", exclude={"kind", "entry_point"}, exclude_none=True),
        "frozen_texts": dict(frozen), "simulated": simulated}
    if preset.kind != DEFAULT_KIND:
        document["baseline"] = preset.model_dump(mode="json", include=set(BASELINE_ONLY))
    return digest(document)


def answer_fingerprint(memory: str, job: CandidateQuestion, preset: CandidatePreset) -> str:
    settings = preset.model_dump(mode="json", include=set(ANSWER_ONLY))
    settings |= {name: getattr(preset, name) for name in LATER_ANSWER_ONLY
                 if getattr(preset, name) != CandidatePreset.model_fields[name].default}
    return digest({"kind": "answer", "memory": memory, "question_id": job.question_id, "question": job.question,
                   "settings": settings})
