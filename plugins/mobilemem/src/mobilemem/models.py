"""The one factory that builds AgentScope chat models for a role (DESIGN §4.4, §7), on the
`Endpoint` of `mobilemem.endpoints` (where credentials are read; importable from here too).

`build_chat_model` sets zero retries at every layer (openai client, AgentScope model; the agent's
`ModelConfig` defaults to 0 and gets no fallback model), the per-request timeout, and an httpx
client whose `RecordingTransport` observes every exchange for the usage policy.

`within_budget` is the one budgeted model call of the plugins (a ReMe job, a baseline's request, a
judgment): its wall-clock budget, a cancellation a library swallowed, a failed call, as one `Failure`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx
import openai
from agentscope.credential import OpenAICredential
from agentscope.message import TextBlock, UserMsg
from agentscope.model import ChatModelBase, ChatResponse, OpenAIChatModel

from mobilemem import usage
from mobilemem.endpoints import Endpoint
from mobilemem.records import CandidatePreset, Failure, ObservedRequest, RequestPreset
from mobilemem.errors import describe
from mobilemem.failure_kinds import FailureKind, failure_label
from mobilemem.transport import RecordingTransport, RequestGate


T = TypeVar("T")
# What a failed model call raises below the agent: HTTP status, connection, timeout, and a body
# that is not JSON (the openai SDK lets json.JSONDecodeError through).
MODEL_CALL_ERRORS: tuple[type[BaseException], ...] = (openai.APIError, httpx.HTTPError, json.JSONDecodeError)


def build_chat_model(endpoint: Endpoint, preset: RequestPreset, gate: RequestGate | None = None) -> OpenAIChatModel:
    """An AgentScope chat model for `endpoint` with the preset's request values and no retries;
    with a `gate` (an endpoint limit), every HTTP request it makes waits for its turn."""
    transport = RecordingTransport(httpx.AsyncHTTPTransport(retries=0), secrets=[endpoint.api_key.get_secret_value()],
                                   gate=gate)
    http_client = httpx.AsyncClient(transport=transport, timeout=preset.request_timeout_s)
    context_size = preset.context_size if isinstance(preset, CandidatePreset) else 128_000
    return OpenAIChatModel(
        credential=OpenAICredential(api_key=endpoint.api_key.get_secret_value(), base_url=endpoint.base_url),
        model=endpoint.model,
        parameters=OpenAIChatModel.Parameters(max_tokens=preset.max_tokens, temperature=preset.temperature),
        stream=preset.stream,
        max_retries=0,
        retry_delay=0.0,
        context_size=context_size,
        client_kwargs={"max_retries": 0, "timeout": preset.request_timeout_s, "http_client": http_client},
        extra_body=dict(preset.extra_body),
    )


async def close_chat_model(model: OpenAIChatModel) -> None:
    """Close the model's HTTP client (and its connection pool)."""
    await model.client.close()


def raise_if_cancelled() -> None:
    """Propagate a cancellation that a library swallowed (AgentScope turns one into an interrupted
    reply): work stopped because the run is being interrupted is not a technical gap."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def within_budget(call: Callable[[], Awaitable[T]], budget_s: float | None, *, what: str,
                        over: FailureKind, interrupted: str | None = None,
                        model_errors: bool = False) -> tuple[T | None, Failure | None, list[ObservedRequest]]:
    """`call()` in its own usage scope, bounded by `budget_s` of wall clock: (its result, None, its
    requests), or (None, the failure, its requests) when the budget ran out (kind `over`), when a
    library swallowed a cancellation into an interrupted reply (`interrupted`: the message; None lets
    the CancelledError through) or, with `model_errors`, when a model call failed. The run's own
    interruption always propagates."""
    with usage.scope() as own:
        try:
            async with asyncio.timeout(budget_s) as budget:
                result = await call()
            if budget.expired():  # a library swallowed the budget's cancellation
                raise TimeoutError
            raise_if_cancelled()
        except TimeoutError:
            spent = f"exceeded its {budget_s:g} s budget" if budget_s is not None else "timed out"
            return None, Failure(kind=over, message=f"the {what} {spent}"), own.requests
        except asyncio.CancelledError:
            raise_if_cancelled()  # the run is being interrupted: not a failure of this call
            if interrupted is None:
                raise
            return None, Failure(kind=FailureKind.INTERRUPTED, message=interrupted), own.requests
        except MODEL_CALL_ERRORS as exc:
            if not model_errors:
                raise
            raise_if_cancelled()  # a request cut short by an interrupt is not a failure
            kind = usage.failure_category(own.requests) or failure_label(exc)  # the transport saw the exchange
            return None, Failure.of_label(kind, message=describe(exc)), own.requests
    return result, None, own.requests


async def reply_text(model: ChatModelBase, content: list) -> str:
    """The text of the model's reply to one user message of `content` blocks (streamed or not):
    the judge's call and a baseline's one answer request."""
    result = await model(messages=[UserMsg(name="user", content=content)])
    if not isinstance(result, ChatResponse):  # streamed: the last chunk carries the whole reply
        async for chunk in result:
            result = chunk
    assert isinstance(result, ChatResponse)
    return "".join(block.text for block in result.content if isinstance(block, TextBlock))
