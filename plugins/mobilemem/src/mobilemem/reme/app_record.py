"""What run.json records of ReMe's application (DESIGN §4, §5): the configuration every user's
application is opened with, as ReMe resolves it (`app.app_config`, the one configuration
`open_user_app` opens, with the plugin's `application_defaults` merged under it by ReMe's
`resolve_plugin_runtime` and validated as ReMe's `ApplicationConfig`, as `Application` does); its
credentials excluded (`mobilemem.credential_scrub`) and the user's workspace replaced by WORKSPACE,
so it is the same for every user; its sha256; and the steps of ReMe's default jobs that the run's
jobs of the same names leave out, each with why (OMISSION_REASONS). No model is built, no request
sent, nothing written (a few tens of milliseconds, once per run).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from reme.config.config_parser import resolve_app_config
from reme.plugin import resolve_plugin_runtime
from reme.schema import ApplicationConfig

from mobilemem.credential_scrub import exclude_credentials
from mobilemem.records import CandidatePreset, OmittedStep, ReMeAppConfig
from mobilemem.reme.app import app_config

WORKSPACE = "<users/UID/workspace>"
_PROBE = Path("/users/UID/workspace")  # resolved by ReMe, then replaced by WORKSPACE wherever it shows
OMISSION_REASONS = {
    "auto_tag_step": "the benchmark preset has no tag index (file_store without tag_index) and no list_tags job: "
                     "the step would fail on every session, and nothing the answer agent uses reads tags",
}
REPLACED_MODEL = "the run's candidate model (run.json config.model, sent with the preset config.candidate)"
UNEXPLAINED = "ReMe's default job runs it; no reason is recorded for leaving it out"


def canonical_sha256(document: Any) -> str:
    """sha256 of the canonical JSON of `document` (sorted keys, no whitespace, UTF-8)."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def resolved_app_config(workspace: Path, preset: CandidatePreset) -> dict[str, Any]:
    """The configuration ReMe's `Application` validates when `open_user_app` opens `workspace`."""
    runtime = resolve_plugin_runtime(app_config(workspace, preset))
    return ApplicationConfig(**runtime.config).model_dump(mode="json")


def _placeholder(value: Any, workspace: str) -> Any:
    if isinstance(value, dict):
        return {name: _placeholder(item, workspace) for name, item in value.items()}
    if isinstance(value, list):
        return [_placeholder(item, workspace) for item in value]
    return value.replace(workspace, WORKSPACE) if isinstance(value, str) else value


def omitted_steps(jobs: dict[str, Any]) -> list[OmittedStep]:
    """Per job that ReMe's default configuration also declares: its steps the run's job does not run."""
    defaults = resolve_app_config(log_config=False)["jobs"]  # ReMe's default.yaml, as ReMe reads it
    omitted = []
    for name in sorted(jobs.keys() & defaults.keys()):
        kept = {step["backend"] for step in jobs[name].get("steps", [])}
        for step in (s["backend"] for s in defaults[name].get("steps", []) if s["backend"] not in kept):
            omitted.append(OmittedStep(job=name, step=step, reason=OMISSION_REASONS.get(step, UNEXPLAINED)))
    return omitted


def recorded_app_config(preset: CandidatePreset) -> ReMeAppConfig:
    """run.json's `reme_app_config` of a run with this candidate preset."""
    resolved = resolved_app_config(_PROBE, preset)
    config = exclude_credentials(_placeholder(resolved, resolved["workspace_dir"]))
    assert isinstance(config, dict)
    replaced = {f"components.as_llm.{name}": REPLACED_MODEL for name in config["components"].get("as_llm", {})}
    return ReMeAppConfig(config=config, sha256=canonical_sha256(config), omitted_steps=omitted_steps(config["jobs"]),
                         replaced_at_open=replaced)
