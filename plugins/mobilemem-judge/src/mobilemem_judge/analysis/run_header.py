"""What a report names at its top (DESIGN §7.2): the candidate that was evaluated and the judge
that labelled it, read from run.json and judge-settings.json (the analysis never imports a
candidate: a kind is known by its name and by what run.json recorded of it)."""

from __future__ import annotations

from dataclasses import dataclass

from mobilemem.records import JudgeSettingsFile
from mobilemem.run_reader import RunReader

REME_IMAGE = "reme-image"
DISPLAY_NAMES = {REME_IMAGE: "ReMe Image", "no-memory": "No memory (baseline)", "bm25-rag": "BM25-RAG (baseline)"}


@dataclass(frozen=True)
class RunHeader:
    candidate_kind: str
    candidate_name: str  # the display name: a built-in's, else the raw kind
    plugin_package: str | None  # a plug-in from outside mobilemem: `name==version`, as run.json recorded it
    reme: str | None  # "ReMe <version>, preset <preset>" for ReMe Image, else None
    model: str  # the candidate (answering) model
    judge_model: str | None  # None: judge-settings.json is missing or damaged


def candidate_name(kind: str) -> str:
    return DISPLAY_NAMES.get(kind, kind)


def run_header(reader: RunReader) -> RunHeader:
    """A damaged judge-settings.json is one line of the reader's `damaged`."""
    plan = reader.plan
    kind = plan.config.candidate.kind
    provenance = plan.candidate
    judge = reader.tolerant(reader.run.judge_settings, JudgeSettingsFile)
    reme = (f"ReMe {provenance.reme_version}, preset {provenance.preset}"
            if provenance is not None and kind == REME_IMAGE else None)
    return RunHeader(candidate_kind=kind, candidate_name=candidate_name(kind),
                     plugin_package=provenance.plugin_package if provenance else None, reme=reme,
                     model=plan.config.model, judge_model=judge.model if judge else None)
