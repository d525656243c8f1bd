"""What produced a run's answers, as run.json records it: the checkout's commit, the installed packages'
versions and the candidate's provenance (`plan` computes the same for its fingerprints)."""

from __future__ import annotations

import subprocess
from importlib import metadata
from pathlib import Path

from mobilemem.records import CandidateProvenance, Config, DEFAULT_KIND
from mobilemem.reme import PLUGIN_NAME, PRESET

PACKAGES = ("mobilemem-bench", "mobilemem", "mobilemem-judge", "reme-ai", "agentscope", "prefect", "openai", "httpx",
            "pillow", "pydantic", "numpy")

def git_commit() -> tuple[str | None, bool | None]:
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True,
                               timeout=10, check=True).stdout.strip() != ""
        return commit or None, dirty
    except (OSError, subprocess.SubprocessError):
        return None, None


def package_versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def candidate_provenance(config: Config) -> CandidateProvenance:
    """What produced the answers: ReMe through the plugin, or a baseline (no ReMe preset or plugin)."""
    versions, kind = package_versions(), config.candidate.kind
    reme = kind == DEFAULT_KIND
    return CandidateProvenance(kind=kind, reme_version=versions["reme-ai"], agentscope_version=versions["agentscope"],
                               preset=PRESET if reme else "none", plugin=PLUGIN_NAME if reme else "none",
                               plugin_version=versions["mobilemem"],
                               inject_runtime_state=config.candidate.inject_runtime_state and reme)
