"""`judge-settings.json`: a credential-free whitelist of the validated judge configuration."""

from __future__ import annotations

from mobilemem.records import JudgePreset, JudgeSettingsFile
from mobilemem.errors import ConfigError
from mobilemem.endpoints import Endpoint
from mobilemem_judge.parse import PARSER_VERSION
from mobilemem_judge.rubric import rubric_sha256

PROTOCOL = "one user message holding the filled rubric; no system prompt; the judge never sees the trajectory"


def judge_settings(preset: JudgePreset, endpoint: Endpoint) -> JudgeSettingsFile:
    """Only whitelisted values: no key, no base URL, no header."""
    try:
        digest = rubric_sha256(preset.rubric)
    except KeyError as exc:
        raise ConfigError(f"judge.rubric: {exc.args[0]}") from None
    return JudgeSettingsFile(
        model=endpoint.model, model_from_env=endpoint.model_from_env, temperature=preset.temperature,
        extra_body=dict(preset.extra_body), max_tokens=preset.max_tokens, stream=preset.stream,
        rubric=preset.rubric, rubric_sha256=digest, protocol=PROTOCOL,
        parser_version=PARSER_VERSION, timeout_s=preset.timeout_s, max_reply_bytes=preset.max_reply_bytes)
