"""Where a role's model requests go (DESIGN §4.4, §7): the one place credentials are read.

Only `Endpoint.from_env` reads them, and only from the environment: `LLM_API_KEY` / `LLM_BASE_URL` for
the candidate; `JUDGE_API_KEY` / `JUDGE_BASE_URL` (falling back to the LLM ones) and `JUDGE_MODEL_NAME`
for the judge. Every credential is registered with the sanitizer. Preflight checks them here without
loading the model client (`mobilemem.models` builds the chat models).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr

from mobilemem.records import Config
from mobilemem.errors import ConfigError, register_secret

Role = Literal["candidate", "judge"]
SIMULATED_KEY = "simulated-key"


class Endpoint(BaseModel):
    """Where a role's requests go. Never serialized into any run-directory file."""

    model_config = ConfigDict(frozen=True)
    role: Role
    model: str
    base_url: str
    api_key: SecretStr
    model_from_env: bool = False

    @classmethod
    def from_env(cls, role: Role, config: Config, environ: Mapping[str, str] | None = None) -> Endpoint:
        env = os.environ if environ is None else environ
        key, url = env.get("LLM_API_KEY"), env.get("LLM_BASE_URL")
        model, from_env = config.model, False
        if role == "judge":
            key, url = env.get("JUDGE_API_KEY") or key, env.get("JUDGE_BASE_URL") or url
            model, from_env = env.get("JUDGE_MODEL_NAME") or config.judge.model, bool(env.get("JUDGE_MODEL_NAME"))
        missing = [name for name, value in (("API key", key), ("base URL", url)) if not value]
        if missing:
            names = "LLM_API_KEY and LLM_BASE_URL" if role == "candidate" else \
                "JUDGE_API_KEY/JUDGE_BASE_URL or LLM_API_KEY/LLM_BASE_URL"
            raise ConfigError(f"no {' or '.join(missing)} for the {role} model: set {names}, "
                              "or pass --simulate to use the local simulator")
        assert key is not None and url is not None
        register_secret(key)
        _refuse_url_credentials(url, role)
        return cls(role=role, model=model, base_url=url, api_key=SecretStr(key), model_from_env=from_env)

    @classmethod
    def simulated(cls, role: Role, config: Config, base_url: str) -> Endpoint:
        model = config.model if role == "candidate" else config.judge.model
        return cls(role=role, model=model, base_url=base_url, api_key=SecretStr(SIMULATED_KEY))


def _refuse_url_credentials(url: str, role: Role) -> None:
    """user:password@ in a base URL would become an Authorization header that replaces the API key."""
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        names = "LLM_BASE_URL" if role == "candidate" else "JUDGE_BASE_URL (or LLM_BASE_URL)"
        raise ConfigError(f"{names} carries credentials (user:password@): remove them from the URL and "
                          "put the key in the API key variable")

