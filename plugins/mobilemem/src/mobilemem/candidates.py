"""The registry of candidates (config `candidate.kind`, `--candidate NAME`; DESIGN §10) and the one place
a user's candidate is opened. A candidate is an entry point of the group `mobilemem.candidates`, its
name the kind, its object a `mobilemem.candidate.CandidatePlugin`: the built-ins (`reme-image`, the
default; `no-memory`, `bm25-rag`; `mobilemem.builtin_candidates`) and any installed distribution's.
The contract they all keep is `mobilemem.candidate`.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING

from mobilemem.candidate import CandidateOpening, CandidatePlugin
from mobilemem.errors import ConfigError, describe
from mobilemem.records import CandidatePreset

if TYPE_CHECKING:
    from agentscope.model import ChatModelBase

    from mobilemem.candidate import Candidate

GROUP = "mobilemem.candidates"
BUILTIN_DISTRIBUTION = "mobilemem"


def _entry_points() -> dict[str, list[EntryPoint]]:
    found: dict[str, list[EntryPoint]] = {}
    for point in entry_points(group=GROUP):
        found.setdefault(point.name, []).append(point)
    return found


def installed() -> tuple[str, ...]:
    """The installed candidates' names, sorted (nothing is imported)."""
    return tuple(sorted(_entry_points()))


def entry_point(kind: str) -> EntryPoint:
    """The one entry point named `kind`; an unknown or ambiguous name is refused in one line."""
    points = _entry_points().get(kind, [])
    if not points:
        raise ConfigError(f"candidate {kind!r} is not installed (installed: {', '.join(installed())}); "
                          f"a plug-in registers an entry point in the group {GROUP!r}")
    if len({p.value for p in points}) > 1:
        raise ConfigError(f"candidate {kind!r} is registered more than once: "
                          + ", ".join(f"{p.value} ({distribution(p) or 'unknown distribution'})" for p in points))
    return points[0]


def distribution(point: EntryPoint) -> str | None:
    """`name==version` of the distribution that registered `point` (None when it is not known)."""
    dist = point.dist
    return None if dist is None else f"{dist.metadata['Name']}=={dist.version}"


@cache
def plugin(kind: str) -> CandidatePlugin:
    """The plug-in named `kind`, loaded (importing its module); refused in one line if it does not load
    or is not a `CandidatePlugin`."""
    point = entry_point(kind)
    try:
        found = point.load()
    except Exception as exc:  # a broken plug-in is the user's input: one line, never a traceback
        raise ConfigError(f"candidate {kind!r} ({point.value}) does not load: {describe(exc)}") from None
    if not isinstance(found, CandidatePlugin):
        raise ConfigError(f"candidate {kind!r} ({point.value}) is a {type(found).__name__}, "
                          "not a mobilemem.candidate.CandidatePlugin")
    return found


def plugin_package(kind: str) -> str | None:
    """The distribution of a plug-in from outside mobilemem (`name==version`); None for the built-ins."""
    point = entry_point(kind)
    dist = point.dist
    return None if dist is None or dist.metadata["Name"] == BUILTIN_DISTRIBUTION else distribution(point)


def remembers(kind: str) -> bool:
    """False for a candidate that ingests nothing: its users' sessions are not even read into it."""
    return plugin(kind).remembers


def prompt_hashes(kind: str) -> dict[str, str]:
    """sha256 of every text the candidate `kind` adds to what its model reads (run.json's prompt_sha256)."""
    return {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in plugin(kind).prompts.items()}


async def open_candidate(kind: str, workspace: Path, model: ChatModelBase, preset: CandidatePreset,
                         dataset_root: Path) -> Candidate:
    """A user's candidate on `users/<uid>/workspace/`, ready for its first session."""
    return await plugin(kind).open(CandidateOpening(workspace, model, preset, dataset_root))
