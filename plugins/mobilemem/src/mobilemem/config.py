"""Configuration (DESIGN §6): shipped defaults < `--config FILE` < command-line flags.

The defaults live in `mobilemem/defaults/config.yaml` (mirrored by the repository's root
`config.yaml`). A file is deep-merged over them, except `extra_body`, which is an opaque request
fragment and is replaced whole. Unknown keys and wrong types are errors naming the file and the
key. No field holds a credential: those come only from the environment (`mobilemem.models`).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from mobilemem.errors import ConfigError

DEFAULTS_RESOURCE = "defaults/config.yaml"
_OPAQUE_KEYS = frozenset({"extra_body"})
_CREDENTIAL_HINTS = ("key", "secret", "token", "password", "base_url")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class RequestPreset(_Section):
    """What every model role sends with each request."""

    temperature: float = Field(ge=0)
    extra_body: dict[str, JsonValue]
    stream: bool
    max_tokens: int = Field(gt=0)
    request_timeout_s: float = Field(gt=0)


class CandidatePreset(RequestPreset):
    context_size: int = Field(gt=0)
    max_images: int = Field(gt=0)
    trigger_ratio: float = Field(gt=0, le=0.9)  # AgentScope keeps 10% for the compression itself
    reserve_ratio: float = Field(gt=0, lt=0.9)
    max_iters: int = Field(gt=0)
    answer_timeout_s: float = Field(gt=0)
    session_timeout_s: float = Field(gt=0)  # wall-clock budget of one session's ingest
    max_answer_bytes: int = Field(gt=0)  # a longer answer is recorded (and judged) cut to this size
    inject_runtime_state: bool  # ReMe's agent wrapper would send the wall-clock time (DESIGN §4.4)

    @model_validator(mode="after")
    def _reserve_below_trigger(self) -> CandidatePreset:
        if self.reserve_ratio >= self.trigger_ratio:
            raise ValueError("reserve_ratio must be smaller than trigger_ratio")
        return self


class JudgePreset(RequestPreset):
    model: str = Field(min_length=1)
    rubric: str = Field(min_length=1)
    timeout_s: float = Field(gt=0)  # wall-clock budget of one judgment
    max_reply_bytes: int = Field(gt=0)  # a longer judge reply is a judge gap


class Config(_Section):
    model: str = Field(min_length=1)
    user_concurrency: int = Field(gt=0)
    query_concurrency: int = Field(gt=0)
    judge_concurrency: int = Field(gt=0)
    min_free_disk_mb: int = Field(ge=0)  # below this, the run starts no new work (DESIGN §8)
    candidate: CandidatePreset
    judge: JudgePreset


def default_config_text() -> str:
    return resources.files("mobilemem").joinpath(DEFAULTS_RESOURCE).read_text(encoding="utf-8")


def _parse_yaml(text: str, source: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of keys, not {type(data).__name__}")
    return data


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` wins; nested mappings merge key by key, except opaque keys, which are replaced."""
    merged = dict(base)
    for key, value in over.items():
        if key not in _OPAQUE_KEYS and isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _explain(exc: ValidationError, source: str) -> ConfigError:
    lines = []
    for err in exc.errors():
        key = ".".join(str(part) for part in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            hint = ""
            if any(h in key.rsplit(".", 1)[-1].lower() for h in _CREDENTIAL_HINTS):
                hint = " (credentials and endpoints come only from LLM_* / JUDGE_* environment variables)"
            lines.append(f"{source}: {key}: unknown key{hint}")
        else:
            lines.append(f"{source}: {key}: {err['msg']} (got {err.get('input')!r})")
    return ConfigError("invalid configuration:\n" + "\n".join(lines))


def load_config(path: Path | None = None, overrides: Mapping[str, Any] | None = None) -> Config:
    """Defaults, then `path` deep-merged over them, then `overrides` (already nested, None = unset)."""
    data = _parse_yaml(default_config_text(), "mobilemem defaults")
    source = "mobilemem defaults"
    if path is not None:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read the configuration file: {exc}") from None
        data = deep_merge(data, _parse_yaml(text, source))
    flags = {key: value for key, value in (overrides or {}).items() if value is not None}
    if flags:
        source = f"{source} + command-line flags"
        data = deep_merge(data, flags)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise _explain(exc, source) from None
