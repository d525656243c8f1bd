"""What a model request cost (usage policy version 2, DESIGN §7.1)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from mobilemem.records.failures import Failure


class ObservedRequest(BaseModel):
    """One HTTP exchange of a model role, as seen by the usage recorder."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    started_at: AwareDatetime
    finished_at: AwareDatetime
    status: int | None = Field(description="HTTP status; null when no response arrived")
    success: bool = Field(description="2xx and the body was read completely")
    streamed: bool
    compression: bool = False
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    failure: Failure | None = Field(default=None, description="a failed request: its category ('HTTP 500', "
                                                              "'timeout', 'cancelled', ...), what went wrong and "
                                                              "the runner code that made it")


def v1_requests(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 record's `requests` in this version's shape (error, failure, frames -> failure)."""
    if "requests" in data and isinstance(data["requests"], list):
        data["requests"] = [_v1_request(r) if isinstance(r, dict) else r for r in data["requests"]]
    return data


def _v1_request(request: dict[str, Any]) -> dict[str, Any]:
    request = dict(request)
    error, label, frames = request.pop("error", None), request.pop("failure", None), request.pop("frames", [])
    if not request.get("success", True) or error is not None or label is not None:
        request["failure"] = Failure.of_label(label or "failed", message=error, frames=frames).model_dump()
    return request


class UsageCounter(BaseModel):
    """A token counter: `value` is null when no observed response reported it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    value: int | None = None
    reported_by: int = 0
    observed: int = 0


class Usage(BaseModel):
    """The counters of a set of requests. Its `policy_version` stays 2: policy version 3 changed only
    summary.json's means (`UsageSummary.policy_version`), not how requests are counted."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    policy_version: Literal[2] = 2
    requests: int = 0
    successful_requests: int = 0
    prompt_tokens: UsageCounter = UsageCounter()
    completion_tokens: UsageCounter = UsageCounter()
    total_tokens: UsageCounter = UsageCounter()
    reasoning_tokens: UsageCounter = UsageCounter()
    cached_tokens: UsageCounter = UsageCounter()
    tokens: UsageCounter = Field(default=UsageCounter(), description="total, or prompt + completion")
