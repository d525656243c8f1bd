"""A configuration with its credentials excluded, for a record a user reads (run.json's ReMe
application configuration, DESIGN §5). Every value stays as it is except:

- the value under a credential-like name (one of the name's words, split at non-alphanumerics and
  camelCase, is in CREDENTIAL_WORDS: `api_key`, `X-Api-Key`, `access_token`, `password`) becomes
  EXCLUDED, whatever it holds, an empty string too (the record does not tell whether one was set);
- a URL keeps its scheme, host, port and path, never a `user:password@` (EXCLUDED instead) nor the
  value of a query parameter with a credential-like name;
- every credential the run registered (`errors.register_secret`: its API keys) and the value of every
  environment variable with a credential-like name (of MIN_SECRET_CHARS or more) becomes EXCLUDED
  wherever it occurs inside a string (a key copied into a field of another name).
Base URLs, model names and paths are not secrets: they stay.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from pydantic import JsonValue

from mobilemem.errors import registered_secrets

EXCLUDED = "<excluded>"
CREDENTIAL_WORDS = frozenset({"key", "apikey", "secret", "token", "password", "passwd", "authorization", "cookie"})
MIN_SECRET_CHARS = 8  # a shorter environment value ("1", "true") would blank ordinary text
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")
_QUERY_PARAMETER = re.compile(r"([?&])([^=&#\s]+)=([^&#\s]*)")


def credential_like(name: str) -> bool:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return not CREDENTIAL_WORDS.isdisjoint(re.split(r"[^a-z0-9]+", spaced))


def environment_secrets(environ: Mapping[str, str]) -> set[str]:
    return {value for name, value in environ.items() if credential_like(name) and len(value) >= MIN_SECRET_CHARS}


def exclude_credentials(value: JsonValue, secrets: Iterable[str] = ()) -> JsonValue:
    """`value` (JSON data) with its credentials excluded; `secrets` are excluded verbatim too."""
    known = {*secrets, *registered_secrets(), *environment_secrets(os.environ)}
    return _scrub(value, sorted(known, key=len, reverse=True))  # longest first: a secret holding another goes whole


def _scrub(value: JsonValue, secrets: list[str]) -> JsonValue:
    if isinstance(value, dict):
        return {name: EXCLUDED if credential_like(name) else _scrub(item, secrets) for name, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item, secrets) for item in value]
    if isinstance(value, str):
        return _scrub_text(value, secrets)
    return value


def _scrub_text(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, EXCLUDED)
    if "://" not in text:
        return text
    text = _USERINFO.sub(rf"\1{EXCLUDED}@", text)
    return _QUERY_PARAMETER.sub(lambda m: f"{m[1]}{m[2]}={EXCLUDED}" if credential_like(m[2]) else m[0], text)
