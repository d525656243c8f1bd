"""Configuration (DESIGN §6): defaults < `--config FILE` < command-line flags.

The defaults file is the checkout's root `config.yaml` when the run starts from a checkout
(`mobilemem.checkout`: editing that file changes the run), else the copy packaged in `mobilemem`
(`mobilemem/defaults/config.yaml`, the mirror of the root file, for installs without the
checkout). `config_files` says which files a run used (run.json). A file is deep-merged over the
defaults, except `extra_body`, which is an opaque request fragment and is replaced whole. Unknown
keys and wrong types are errors naming the file and the key. The schema is `mobilemem.records.config`
(run.json holds the effective one); no field holds a credential: those come only from the
environment (`mobilemem.models`).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from mobilemem.checkout import repository_root
from mobilemem.errors import ConfigError
from mobilemem.records import Config, ConfigFiles

DEFAULTS_RESOURCE = "defaults/config.yaml"
_OPAQUE_KEYS = frozenset({"extra_body"})
_CREDENTIAL_HINTS = ("key", "secret", "token", "password", "base_url")


def default_config_text() -> str:
    """The packaged defaults (the fallback without a checkout)."""
    return resources.files("mobilemem").joinpath(DEFAULTS_RESOURCE).read_text(encoding="utf-8")


def defaults_file() -> tuple[Traversable, Literal["checkout", "package"]]:
    """The defaults: the checkout's root config.yaml when the run starts from a checkout, else the
    packaged copy; and which of the two it is."""
    root = repository_root()
    if root is not None:
        return root / "config.yaml", "checkout"
    return resources.files("mobilemem").joinpath(DEFAULTS_RESOURCE), "package"


def config_files(path: Path | str | None) -> ConfigFiles:
    """Which defaults file and which `--config` file `load_config(path)` reads (for run.json)."""
    defaults, origin = defaults_file()
    return ConfigFiles(defaults=str(defaults), defaults_from=origin,
                       config=str(Path(path).absolute()) if path is not None else None)


def _read(file: Traversable, what: str) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: cannot read the {what}: {exc}") from None


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


def load_config(path: Path | None = None, overrides: Mapping[str, Any] | None = None,
                base: Mapping[str, Any] | None = None) -> Config:
    """Defaults (or `base`: an earlier run's effective configuration, for `rejudge`), then `path`
    deep-merged over them, then `overrides` (already nested, None = unset)."""
    if base is not None:
        source, data = "the earlier run's configuration", dict(base)
    else:
        defaults, _ = defaults_file()
        source = str(defaults)
        data = _parse_yaml(_read(defaults, "defaults file"), source)
    if path is not None:
        source = str(path)
        data = deep_merge(data, _parse_yaml(_read(Path(path), "configuration file"), source))
    flags = {key: value for key, value in (overrides or {}).items() if value is not None}
    if flags:
        source = f"{source} + command-line flags"
        data = deep_merge(data, flags)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise _explain(exc, source) from None
