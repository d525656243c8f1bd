import asyncio

import openai
import pytest

from mobilemem import usage
from mobilemem.config import load_config
from mobilemem.errors import ConfigError, sanitize
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.simulator import FaultRule
from model_calls import complete

CONFIG = load_config()


def test_missing_candidate_credentials_is_one_clear_error():
    with pytest.raises(ConfigError) as info:
        Endpoint.from_env("candidate", CONFIG, {})
    message = str(info.value)
    assert "LLM_API_KEY" in message and "--simulate" in message and "\n" not in message


def test_judge_falls_back_to_llm_and_can_override_everything():
    env = {"LLM_API_KEY": "sk-llm-0123456789", "LLM_BASE_URL": "http://llm.invalid/v1"}
    judge = Endpoint.from_env("judge", CONFIG, env)
    assert (judge.base_url, judge.api_key.get_secret_value(), judge.model, judge.model_from_env) == (
        "http://llm.invalid/v1", "sk-llm-0123456789", "qwen3.8-max", False)
    env |= {"JUDGE_API_KEY": "sk-judge-0123456789", "JUDGE_BASE_URL": "http://judge.invalid/v1",
            "JUDGE_MODEL_NAME": "judge-x"}
    judge = Endpoint.from_env("judge", CONFIG, env)
    assert (judge.base_url, judge.api_key.get_secret_value(), judge.model, judge.model_from_env) == (
        "http://judge.invalid/v1", "sk-judge-0123456789", "judge-x", True)
    candidate = Endpoint.from_env("candidate", CONFIG, env)
    assert candidate.api_key.get_secret_value() == "sk-llm-0123456789" and candidate.model == "qwen3.8-max"


def test_credentials_are_registered_with_the_sanitizer_and_hidden_in_repr():
    env = {"LLM_API_KEY": "plain-key-without-shape-42", "LLM_BASE_URL": "https://h.invalid/v1"}
    endpoint = Endpoint.from_env("candidate", CONFIG, env)
    assert "plain-key-without-shape-42" not in repr(endpoint)
    assert "plain-key-without-shape-42" not in sanitize("key plain-key-without-shape-42 in a message")


@pytest.mark.parametrize("role", ["candidate", "judge"])
def test_a_base_url_with_credentials_is_refused_without_echoing_them(role):
    env = {"LLM_API_KEY": "k-1234567890", "LLM_BASE_URL": "https://bob:hunter2secret@h.invalid/v1"}
    with pytest.raises(ConfigError) as refused:
        Endpoint.from_env(role, CONFIG, env)
    assert "user:password@" in str(refused.value) and "hunter2secret" not in str(refused.value)


async def _body(sim, role: str, text: str, preset) -> dict:
    model = build_chat_model(Endpoint.simulated(role, CONFIG, sim.base_url), preset)
    try:
        await complete(model, text)
    finally:
        await close_chat_model(model)
    [request] = sim.requests
    return request.body


async def test_candidate_requests_carry_the_preset(sim):
    body = await _body(sim, "candidate", "hello", CONFIG.candidate)
    assert body["model"] == "qwen3.8-max"
    assert body["temperature"] == 0.0
    assert body["enable_thinking"] is True  # extra_body merged into the top level
    assert body["max_completion_tokens"] == 65536
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_judge_requests_carry_the_preset(sim):
    body = await _body(sim, "judge", "hello", CONFIG.judge)
    assert body["enable_thinking"] is False
    assert body["max_completion_tokens"] == 4096
    assert body.get("stream") in (False, None) and "stream_options" not in body
    assert body["temperature"] == 0.0


@pytest.mark.parametrize("kind", ["http_500", "http_429", "timeout", "reset"])
async def test_no_retries_anywhere(sim, kind):
    sim.faults = [FaultRule(role="*", contains="", kind=kind, delay_s=1.5)]
    preset = CONFIG.candidate.model_copy(update={"request_timeout_s": 0.5})
    model = build_chat_model(Endpoint.simulated("candidate", CONFIG, sim.base_url), preset)
    try:
        with usage.scope() as scope, pytest.raises((openai.APIError, Exception)):
            await complete(model, "fail please")
    finally:
        await close_chat_model(model)
    await asyncio.sleep(0)  # let the server log the finished attempt
    assert len(sim.requests) == 1
    [observed] = scope.requests
    assert observed.success is False and observed.prompt_tokens is None
