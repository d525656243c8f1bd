"""What a model request cost (usage policy version 2, DESIGN §7.1)."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from mobilemem.records.failures import StackFrame


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
    error: str | None = None
    failure: str | None = Field(default=None, description="category of a failed request: 'HTTP 500', 'timeout', "
                                                          "'cancelled', ...")
    frames: list[StackFrame] = Field(default_factory=list, description="a failed request only: the runner code "
                                                                       "that made it (repository-relative)")


class UsageCounter(BaseModel):
    """A token counter: `value` is null when no observed response reported it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    value: int | None = None
    reported_by: int = 0
    observed: int = 0


class Usage(BaseModel):
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
