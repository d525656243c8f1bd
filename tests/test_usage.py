import asyncio
import base64
import json
import string

import httpx
import openai
import pytest
from agentscope.tool import ToolChoice
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from mobilemem import response_rewrite, transport, usage
from mobilemem.config import load_config
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.records import ObservedRequest
from mobilemem.simulator import FaultRule
from hostile_endpoint import Escaper, Hostility, escapings, leaks, start_hostile
from model_calls import complete

CONFIG = load_config()
COUNTERS = ("prompt_tokens", "completion_tokens", "total_tokens")


def _model(sim, role="candidate", **update):
    preset = (CONFIG.candidate if role == "candidate" else CONFIG.judge).model_copy(update=update)
    return build_chat_model(Endpoint.simulated(role, CONFIG, sim.base_url), preset)


def _returned(logged) -> dict:
    u = logged.usage
    return {"prompt_tokens": u["prompt_tokens"], "completion_tokens": u["completion_tokens"],
            "total_tokens": u["total_tokens"],
            "reasoning_tokens": (u.get("completion_tokens_details") or {}).get("reasoning_tokens"),
            "cached_tokens": (u.get("prompt_tokens_details") or {}).get("cached_tokens")}


def _observed(record: ObservedRequest) -> dict:
    return {name: getattr(record, name) for name in usage.COUNTERS}


@pytest.mark.parametrize("stream", [True, False])
async def test_usage_equals_what_the_simulator_returned(sim, stream):
    model = _model(sim, stream=stream)
    try:
        with usage.scope() as scope:
            await complete(model, "remember the red umbrella")
    finally:
        await close_chat_model(model)
    [logged] = sim.requests
    [observed] = scope.requests
    assert observed.success and observed.status == 200 and observed.streamed is stream
    assert _observed(observed) == _returned(logged)
    assert observed.prompt_tokens > 0 and observed.reasoning_tokens == 8
    assert observed.finish_reason == "stop"
    summary = scope.usage()
    assert summary.tokens.value == logged.usage["total_tokens"] and summary.tokens.reported_by == 1


async def test_without_include_usage_counters_are_unknown_not_zero(sim):
    client = openai.AsyncOpenAI(api_key="k", base_url=sim.base_url, max_retries=0,
                                http_client=httpx.AsyncClient(transport=transport.RecordingTransport()))
    try:
        with usage.scope() as scope:
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "no usage please"}], stream=True)
            async for _ in stream:
                pass
    finally:
        await client.close()
    [observed] = scope.requests
    assert observed.success and observed.finish_reason == "stop"
    summary = usage.summarize(scope.requests)
    for name in (*usage.COUNTERS, "tokens"):
        counter = getattr(summary, name)
        assert (counter.value, counter.reported_by, counter.observed) == (None, 0, 1)


@pytest.mark.parametrize("stream", [True, False])
async def test_concurrent_scopes_do_not_cross_talk(sim, stream):
    sim.latency_s = 0.05
    model = _model(sim, stream=stream)

    async def one(i: int):
        with usage.scope() as scope:
            await complete(model, f"unique-request-{i} " + "word " * i)
            await asyncio.sleep(0)
            await complete(model, f"unique-request-{i} again")
        return i, scope

    try:
        results = await asyncio.gather(*(one(i) for i in range(12)))
    finally:
        await close_chat_model(model)
    assert sim.max_in_flight() > 1
    for i, scope in results:
        mine = [r for r in sim.requests if f"unique-request-{i} " in json.dumps(r.body)]
        assert len(scope.requests) == len(mine) == 2
        assert sorted(_observed(o)["prompt_tokens"] for o in scope.requests) == sorted(
            _returned(r)["prompt_tokens"] for r in mine)
        assert scope.usage().tokens.value == sum(r.usage["total_tokens"] for r in mine)


async def test_a_failure_keeps_earlier_successes(sim):
    sim.faults = [FaultRule(role="*", contains="second", kind="http_500")]
    model = _model(sim)
    try:
        with usage.scope() as scope:
            await complete(model, "first call")
            with pytest.raises(Exception):
                await complete(model, "second call")
    finally:
        await close_chat_model(model)
    first, second = scope.requests
    assert first.success and first.total_tokens is not None
    assert not second.success and second.status == 500 and second.total_tokens is None
    summary = scope.usage()
    assert (summary.requests, summary.successful_requests) == (2, 1)
    assert summary.total_tokens.value == first.total_tokens
    assert (summary.total_tokens.reported_by, summary.total_tokens.observed) == (1, 2)


@pytest.mark.parametrize(("kind", "error"), [("malformed", "not valid JSON"), ("reset", "")])
async def test_broken_bodies_are_failed_requests(sim, kind, error):
    sim.faults = [FaultRule(role="*", contains="", kind=kind)]
    model = _model(sim)
    try:
        with usage.scope() as scope, pytest.raises(Exception):
            await complete(model, "broken")
    finally:
        await close_chat_model(model)
    [observed] = scope.requests
    assert not observed.success and observed.total_tokens is None and error in (observed.failure.message or "")


async def test_compression_requests_are_flagged(sim):
    model = _model(sim)
    tool = {"type": "function", "function": {"name": "generate_structured_output", "description": "summary",
            "parameters": {"type": "object", "properties": {"summary": {"type": "string"}},
                           "required": ["summary"]}}}
    try:
        with usage.scope() as scope:
            await complete(model, "compress me", tools=[tool],
                           tool_choice=ToolChoice(mode="generate_structured_output"))
            await complete(model, "plain")
    finally:
        await close_chat_model(model)
    assert [r.compression for r in scope.requests] == [True, False]
    assert sim.requests[0].role == "compression"


async def test_records_hold_no_secret_header_or_payload(sim):
    endpoint = Endpoint(role="candidate", model="m", base_url=sim.base_url, api_key="sk-PLANTED-abcdef123456")
    model = build_chat_model(endpoint, CONFIG.candidate)
    sim.faults = [FaultRule(role="*", contains="boom", kind="http_500")]
    try:
        with usage.scope() as scope:
            await complete(model, "hello " + "QUJD" * 500)
            with pytest.raises(Exception):
                await complete(model, "boom")
    finally:
        await close_chat_model(model)
    dumped = json.dumps([r.model_dump(mode="json") for r in scope.requests])
    for forbidden in ("sk-PLANTED", "Authorization", "Bearer", "QUJDQUJD"):
        assert forbidden not in dumped


async def test_requests_outside_a_scope_are_not_recorded(sim):
    model = _model(sim)
    try:
        await complete(model, "outside")
        with usage.scope() as scope:
            await complete(model, "inside")
        await complete(model, "outside again")
    finally:
        await close_chat_model(model)
    assert len(sim.requests) == 3 and len(scope.requests) == 1


async def test_nested_scopes_file_requests_in_every_enclosing_scope(sim):
    model = _model(sim)
    try:
        with usage.scope() as outer:
            await complete(model, "before")
            with usage.scope() as inner:
                await complete(model, "inside")
    finally:
        await close_chat_model(model)
    assert len(inner.requests) == 1 and len(outer.requests) == 2
    assert inner.requests[0] is outer.requests[1]


SECRET = "sk-split-me-0123456789"


@given(st.text(max_size=40), st.text(max_size=40), st.lists(st.integers(min_value=1, max_value=9), max_size=12))
def test_a_credential_never_survives_the_scrubber_however_the_bytes_are_chunked(before, after, cuts):
    data = f"{before}{SECRET}{after}{base64.b64encode(SECRET.encode()).decode()}".encode()
    scrubber, out, start = response_rewrite.Scrubber(response_rewrite.secret_forms([SECRET])), b"", 0
    for cut in cuts:
        out += scrubber.feed(data[start:start + cut])
        start += cut
    out += scrubber.feed(data[start:]) + scrubber.flush()
    assert SECRET.encode() not in out and base64.b64encode(SECRET.encode()) not in out
    assert out.count(b"[redacted]") >= 2


def test_a_credential_split_across_stream_deltas_is_removed_and_the_rest_released_with_the_finish():
    pieces = ["Your key: sk-split", "-me-01234", "56789, done."]
    events = [{"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 3}})
    raw = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"
    rewriter = response_rewrite.StreamRewriter(True, response_rewrite.secret_forms([SECRET]))
    out = b"".join(rewriter.feed(raw[i:i + 7]) for i in range(0, len(raw), 7)) + rewriter.flush()
    lines = [json.loads(line[5:]) for line in out.split(b"\n") if line.startswith(b"data: {")]
    text = "".join(c["delta"].get("content", "") for e in lines for c in e["choices"])
    assert text == "Your key: [redacted], done." and lines[-1]["usage"] is None  # partial usage hidden
    assert out.endswith(b"data: [DONE]\n\n")


KEY_CHARACTERS = string.ascii_letters + string.digits + "/+=_-.~\"\\"


@pytest.fixture(scope="module")
def hostile():
    with start_hostile() as server:
        yield server


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(KEY_CHARACTERS, min_size=12, max_size=40), st.booleans(), st.data())
async def test_an_echoed_key_is_removed_however_the_json_on_the_wire_escapes_it(hostile, key, stream, data):
    assume(any(c.isdigit() for c in key) and any(not c.isalnum() for c in key))  # a key, not a field name
    hostile.rules = [Hostility(role="*", kind="echo_key", escapes=data.draw(escapings(key)))]
    endpoint = Endpoint(role="candidate", model="m", base_url=hostile.base_url, api_key=SecretStr(key))
    model = build_chat_model(endpoint, CONFIG.candidate.model_copy(update={"stream": stream}))
    try:
        with usage.scope() as scope:
            reply = await complete(model, "hello")
    finally:
        await close_chat_model(model)
    read = json.dumps(reply, default=str, ensure_ascii=False)
    assert leaks(key, [read, json.dumps([r.model_dump(mode="json") for r in scope.requests])]) == []
    assert read.count("[redacted]") == 3 and scope.requests[0].success  # all three echoes, each removed


STRUCTURE = set(string.ascii_letters + string.digits + '_{}[]":, ')
ANY_KEY = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="«»"), min_size=10, max_size=24)


def _wire(key: str, escapes, stream: bool) -> bytes:
    """A reply echoing `key` twice, in its text and in tool-call arguments (JSON in a JSON string,
    escaped at both levels), as the JSON on the wire writes it."""
    text = f"«{key}» «{key}»"
    arguments = Escaper(escapes).dumps({"content": text})
    if not stream:
        message = {"content": text, "tool_calls": [{"index": 0, "function": {"name": "f", "arguments": arguments}}]}
        return Escaper(escapes).dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode()
    halves = [(text[:len(text) // 2], arguments[:len(arguments) // 2]), (text[len(text) // 2:], arguments[len(arguments) // 2:])]
    events = [{"choices": [{"index": 0, "delta": {"content": t, "tool_calls": [{"index": 0, "function": {"arguments": a}}]},
                            "finish_reason": None}]} for t, a in halves]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return b"".join(f"data: {Escaper(escapes).dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"


def _read(out: bytes, stream: bool) -> tuple[str, str]:
    """(text, arguments) as the client assembles them from what the rewriter handed on."""
    if not stream:
        message = json.loads(out)["choices"][0]["message"]
        return message["content"], message["tool_calls"][0]["function"]["arguments"]
    deltas = [json.loads(line[5:])["choices"][0]["delta"] for line in out.split(b"\n") if line.startswith(b"data: {")]
    calls = [c for d in deltas for c in d.get("tool_calls", [])]
    return "".join(d.get("content", "") for d in deltas), "".join(c["function"]["arguments"] for c in calls)


@given(ANY_KEY, st.booleans(), st.data())
def test_any_key_in_any_legal_escaping_leaves_valid_json_without_the_key(key, stream, data):
    assume(set(key) - STRUCTURE)  # a character of its own: the key is nowhere else in the body
    raw = _wire(key, data.draw(escapings(key)), stream)
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=64), max_size=40))
    scrubber = response_rewrite.Scrubber(response_rewrite.secret_forms([key]))
    rewriter = response_rewrite.StreamRewriter(stream, scrubber.forms)  # as the transport's stream applies them
    out, start = b"", 0
    for cut in cuts:
        out += rewriter.feed(scrubber.feed(raw[start:start + cut]))
        start += cut
    out += rewriter.feed(scrubber.feed(raw[start:])) + rewriter.feed(scrubber.flush()) + rewriter.flush()
    text, arguments = _read(out, stream)
    content = json.loads(arguments)["content"]  # still valid JSON at both levels
    assert leaks(key, [text, content]) == [] and text.count("[redacted]") == content.count("[redacted]") == 2
    if "\\" not in key:  # a key's own backslash may take half of a neighbouring escape with it
        assert text == content == "«[redacted]» «[redacted]»"
