"""mobilemem.simulator over real sockets: the official openai client, a real AgentScope model and
the ``python -m mobilemem.simulator`` process against the local server."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading

import httpx
import openai
import pytest
from openai import AsyncOpenAI

from mobilemem.simulator import FaultRule

SEARCH = {"type": "function", "function": {
    "name": "bm25_search", "description": "Search the memory.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                   "required": ["query"]}}}
QUESTION = "Question:\nWhich digit was on the kayaking sign?\nPlease answer the question based on the memories."


def client(sim, **kwargs) -> AsyncOpenAI:
    return AsyncOpenAI(api_key="sk-sim", base_url=sim.base_url, max_retries=0, **kwargs)


async def ask(sim, stream: bool = False, tools: list[dict] | None = None, text: str = QUESTION, **kwargs):
    """One chat request; a stream is read to the end and returned as its list of chunks."""
    async with client(sim, timeout=kwargs.pop("timeout", 10)) as api:
        extra = {"tools": tools} if tools else {}
        response = await api.chat.completions.create(
            model="qwen3.8-max", messages=[{"role": "user", "content": text}], stream=stream, **extra, **kwargs)
        return [chunk async for chunk in response] if stream else response


async def test_streaming_reply_ends_with_the_logged_usage(sim):
    chunks = await ask(sim, stream=True, tools=[SEARCH], stream_options={"include_usage": True},
                       extra_body={"enable_thinking": True})
    (logged,) = sim.requests
    assert (logged.role, logged.final, logged.fault, logged.status) == ("answer", False, None, 200)
    assert chunks[-1].choices == [] and chunks[-1].usage.model_dump(exclude_none=True) == logged.usage
    assert logged.usage["completion_tokens_details"] == {"reasoning_tokens": 8}
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    pieces = [call.function.arguments for d in deltas for call in d.tool_calls or [] if call.function.arguments]
    assert len(pieces) >= 2 and json.loads("".join(pieces)) == {"query": "Which digit was on the kayaking sign"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert logged.reply["tool_calls"] == [{"name": "bm25_search", "arguments": "".join(pieces)}]


async def test_streamed_text_comes_in_several_chunks_and_usage_only_when_asked(sim):
    chunks = await ask(sim, stream=True, text="Please say something.")
    texts = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(texts) == "OK." and len(texts) >= 2
    assert all(c.usage is None for c in chunks) and sim.requests[0].usage is None


async def test_non_streamed_reply_carries_the_logged_usage(sim):
    response = await ask(sim, tools=[SEARCH])
    (logged,) = sim.requests
    assert response.usage.model_dump(exclude_none=True) == logged.usage
    assert response.usage.total_tokens == response.usage.prompt_tokens + response.usage.completion_tokens
    assert response.choices[0].message.tool_calls[0].function.name == "bm25_search"


async def test_models_are_listed_and_unknown_paths_are_404(sim):
    async with client(sim) as api:
        assert "qwen3.8-max" in [m.id async for m in api.models.list()]
    async with httpx.AsyncClient(base_url=sim.base_url) as http:
        missing = await http.post("/embeddings", json={})
    assert missing.status_code == 404 and "error" in missing.json()
    assert sim.requests == []


@pytest.mark.parametrize(("kind", "error", "status"), [
    ("http_500", openai.InternalServerError, 500), ("http_429", openai.RateLimitError, 429)])
async def test_http_error_faults(sim, kind, error, status):
    sim.faults = [FaultRule("answer", "kayaking", kind)]
    with pytest.raises(error):
        await ask(sim, tools=[SEARCH])
    (logged,) = sim.requests
    assert (logged.fault, logged.status, logged.usage, logged.reply) == (kind, status, None, None)


async def test_timeout_fault_outlasts_the_client_timeout(sim):
    sim.faults = [FaultRule("*", "", "timeout", delay_s=2)]
    with pytest.raises(openai.APITimeoutError):
        await ask(sim, timeout=0.5)
    assert sim.wait_idle(10)
    assert [r.fault for r in sim.requests] == ["timeout"]
    assert await ask(sim) is not None  # the server is still serving


@pytest.mark.parametrize("stream", [False, True])
async def test_reset_fault_breaks_the_connection(sim, stream):
    sim.faults = [FaultRule("answer", "", "reset")]
    with pytest.raises((openai.APIConnectionError, httpx.TransportError)):
        await ask(sim, stream=stream, tools=[SEARCH])
    assert [(r.fault, r.usage) for r in sim.requests] == [("reset", None)]


@pytest.mark.parametrize("stream", [False, True])
async def test_malformed_fault_is_an_error(sim, stream):
    sim.faults = [FaultRule("plain", "", "malformed")]
    with pytest.raises((openai.APIError, ValueError)):
        await ask(sim, stream=stream)
    assert [(r.fault, r.status) for r in sim.requests] == [("malformed", 200)]


@pytest.mark.parametrize("stream", [False, True])
async def test_reply_faults_reach_the_client(sim, stream):
    cases = [("empty_reply", "stop", "", []),
             ("truncated", "length", "I cannot tell", []),  # cut from "I cannot tell from the image."
             ("invalid_tool_args", "tool_calls", "", [("bm25_search", '{"query": ')]),
             ("unknown_tool", "tool_calls", "", [("no_such_tool", "{}")])]
    for kind, finish, content, calls in cases:
        sim.faults = [FaultRule("answer", "", kind)]
        final = {"tool_choice": "none"} if kind == "truncated" else {}
        assert await _collect(sim, stream, **final) == {"content": content, "calls": calls, "finish_reason": finish}
    assert [r.fault for r in sim.requests] == [c[0] for c in cases]


async def _collect(sim, stream: bool, **kwargs) -> dict:
    """An answer-role reply read through the client as ``{content, calls, finish_reason}``."""
    if not stream:
        message = (choice := (await ask(sim, tools=[SEARCH], **kwargs)).choices[0]).message
        calls = [(c.function.name, c.function.arguments) for c in message.tool_calls or []]
        return {"content": message.content or "", "calls": calls, "finish_reason": choice.finish_reason}
    content, calls, finish = "", {}, None
    for chunk in await ask(sim, stream=True, tools=[SEARCH], **kwargs):
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for call in delta.tool_calls or []:
            name, args = calls.get(call.index, ("", ""))
            calls[call.index] = (name + (call.function.name or ""), args + (call.function.arguments or ""))
        finish = chunk.choices[0].finish_reason or finish
    return {"content": content, "calls": list(calls.values()), "finish_reason": finish}


async def test_endless_tool_calls_keep_searching_until_final(sim):
    sim.faults = [FaultRule("answer", "", "endless_tool_calls")]
    messages = [{"role": "user", "content": QUESTION},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "bm25_search", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "Image ID: image/uid0/a.png"}]
    async with client(sim) as api:
        again = await api.chat.completions.create(model="m", messages=messages, tools=[SEARCH])
        final = await api.chat.completions.create(model="m", messages=messages, tools=[SEARCH], tool_choice="none")
    assert again.choices[0].message.tool_calls[0].function.name == "bm25_search"
    assert final.choices[0].message.tool_calls is None and final.choices[0].message.content
    assert [(r.final, r.fault) for r in sim.requests] == [(False, "endless_tool_calls"), (True, "endless_tool_calls")]


async def test_fault_times_and_substring_are_honoured(sim):
    sim.faults = [FaultRule("answer", "kayaking", "http_500", times=2)]
    for _ in range(2):
        with pytest.raises(openai.InternalServerError):
            await ask(sim, tools=[SEARCH])
    await ask(sim, tools=[SEARCH])
    await ask(sim, tools=[SEARCH], text="Question:\nWhere did I go hiking?\nPlease answer.")
    assert [r.status for r in sim.requests] == [500, 500, 200, 200]
    assert [r.fault for r in sim.requests] == ["http_500", "http_500", None, None]


async def test_eight_concurrent_requests_are_all_in_flight(sim):
    sim.latency_s = 0.2
    async with client(sim) as api:
        await asyncio.gather(*(api.chat.completions.create(
            model="m", messages=[{"role": "user", "content": QUESTION}], tools=[SEARCH]) for _ in range(8)))
    assert sim.max_in_flight() == 8 and sim.max_in_flight("answer") == 8 and sim.max_in_flight("judge") == 0
    assert all(r.status == 200 and r.finished >= r.started for r in sim.requests)
    sim.reset()
    assert (sim.requests, sim.max_in_flight(), sim.latency_s, sim.faults) == ([], 0, 0.0, [])


async def test_a_real_agentscope_model_is_classified_and_parsed(sim):
    from agentscope.credential import OpenAICredential
    from agentscope.message import TextBlock, ToolCallBlock, UserMsg
    from agentscope.model import OpenAIChatModel

    model = OpenAIChatModel(credential=OpenAICredential(api_key="sk-sim", base_url=sim.base_url), model="m",
                            stream=True, max_retries=0, client_kwargs={"max_retries": 0},
                            extra_body={"enable_thinking": True})
    result = await model(messages=[UserMsg(name="user", content=[TextBlock(text="hello")])], tools=[SEARCH])
    responses = [chunk async for chunk in result]
    (logged,) = sim.requests
    assert (logged.role, logged.final, logged.status) == ("answer", False, 200)
    assert logged.body["stream_options"] == {"include_usage": True} and logged.body["enable_thinking"] is True
    calls = [b for b in responses[-1].content if isinstance(b, ToolCallBlock)]
    assert [(c.name, json.loads(c.input)) for c in calls] == [("bm25_search", {"query": "hello"})]
    usage = responses[-1].usage
    assert (usage.input_tokens, usage.output_tokens) == (logged.usage["prompt_tokens"],
                                                         logged.usage["completion_tokens"])


def test_the_module_runs_as_a_server_until_sigterm(tmp_path):
    log = tmp_path / "requests.jsonl"
    process = subprocess.Popen([sys.executable, "-m", "mobilemem.simulator", "--port", "0", "--log", str(log)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = _read_line(process, timeout=30)
        assert line.startswith("simulator listening on http://127.0.0.1:") and line.endswith("/v1")
        base_url = line.removeprefix("simulator listening on ")
        response = httpx.post(f"{base_url}/chat/completions", headers={"Authorization": "Bearer sk-secret-42"},
                              json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}, timeout=10)
        assert response.status_code == 200 and response.json()["usage"]["total_tokens"] > 0
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    (entry,) = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
    assert entry["role"] == "plain" and entry["usage"] == response.json()["usage"]
    assert set(entry) == {"id", "role", "final", "fault", "status", "started", "finished", "usage"}
    assert "sk-secret-42" not in log.read_text(encoding="utf-8") + process.stderr.read()


def _read_line(process: subprocess.Popen, timeout: float) -> str:
    """The first stdout line, without hanging the test if the process never prints one."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert lines, "the simulator did not announce its address"
    return lines[0].strip()
