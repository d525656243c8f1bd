"""What produced a run's answers, as run.json records it: the checkout's commit, the installed packages'
versions, the candidate's provenance (`plan` computes the same for its fingerprints) and, for ReMe
Image, ReMe's application configuration."""

from __future__ import annotations

import hashlib
import subprocess
from importlib import metadata
from pathlib import Path

from mobilemem.candidates import entry_point, plugin_package
from mobilemem.records import CandidateProvenance, Config, DEFAULT_KIND, ReMeAppConfig
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


CODE_FOLDERS = ("cli", "flows", "lifecycle", "tasks", "plugins/mobilemem/src", "plugins/mobilemem-judge/src")
CODE_SUFFIXES = (".py", ".yaml", ".txt", ".md")


def code_digest() -> str:
    """sha256 over the runner's code files (path and bytes, in path order): what a worker compares
    with its parent (DESIGN §12), so an edit to a README or a test does not count, one to a module,
    a plugin file or a prompt does."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    files = sorted(p for folder in CODE_FOLDERS for p in (root / folder).rglob("*")
                   if p.suffix in CODE_SUFFIXES and p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        digest.update(f"{path.relative_to(root)}\0{path.stat().st_size}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def package_versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def candidate_provenance(config: Config) -> CandidateProvenance:
    """What produced the answers: ReMe through the plugin, or a baseline or plug-in (no ReMe preset or plugin)."""
    versions, kind = package_versions(), config.candidate.kind
    reme = kind == DEFAULT_KIND
    return CandidateProvenance(kind=kind, reme_version=versions["reme-ai"], agentscope_version=versions["agentscope"],
                               preset=PRESET if reme else "none", plugin=PLUGIN_NAME if reme else "none",
                               plugin_version=versions["mobilemem"],
                               inject_runtime_state=config.candidate.inject_runtime_state and reme,
                               plugin_package=plugin_package(kind), entry_point=entry_point(kind).value)


def reme_app_config(config: Config) -> ReMeAppConfig | None:
    """ReMe Image: the configuration ReMe resolves for every user's application; None for other kinds."""
    if config.candidate.kind != DEFAULT_KIND:
        return None
    from mobilemem.reme.app_record import recorded_app_config  # ReMe loads here: a plan never comes this far

    return recorded_app_config(config.candidate)
