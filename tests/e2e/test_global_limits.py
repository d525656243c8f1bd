"""lifecycle.limits on the session's real Prefect server: global slots hold their size and come
back after an exception or a cancellation; a limit of another size is refused; the run's limits
are created and deleted; the endpoint gate bounds real model requests (the real openai client and
AgentScope model from `build_chat_model`) at the simulator, a stream holding its slot until read.

Everything is driven by events (the simulator's `on_started`, asyncio events); `GUARD_S` only
turns a hang into a failure."""

import asyncio
import threading
import uuid

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.exceptions import ObjectNotFound

from mobilemem.config import load_config
from mobilemem.errors import ConfigError
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.simulator import FaultRule
from lifecycle.dashboard import RunIdentity
from lifecycle.limits import (GlobalSlots, create_run_limits, delete_run_limits, endpoint_gate,
                              endpoint_limit_name, ensure_limit, run_limits)
from model_calls import complete

pytestmark = pytest.mark.slow
CONFIG = load_config()
GUARD_S = 180


def _name(what: str) -> str:
    return f"test-{what}-{uuid.uuid4().hex[:8]}"


async def _active(name: str) -> int:
    async with get_client() as client:
        return (await client.read_global_concurrency_limit_by_name(name)).active_slots


async def test_global_slots_never_hold_more_than_their_size_and_reach_it():
    name = _name("slots")
    await ensure_limit(name, 2)
    slots, inside, peak = GlobalSlots(name), 0, 0
    entered: asyncio.Queue[int] = asyncio.Queue()
    leave = [asyncio.Event() for _ in range(6)]

    async def work(i: int) -> None:
        nonlocal inside, peak
        async with slots:
            inside += 1
            peak = max(peak, inside)
            entered.put_nowait(i)
            await leave[i].wait()
            inside -= 1

    async with asyncio.timeout(GUARD_S):
        tasks = [asyncio.create_task(work(i)) for i in range(6)]
        first = [await entered.get(), await entered.get()]
        assert inside == 2 and await _active(name) == 2
        holders = list(first)
        for _ in range(4):  # one leaves, one more gets in
            leave[holders.pop(0)].set()
            holders.append(await entered.get())
            assert inside <= 2
        for i in holders:
            leave[i].set()
        await asyncio.gather(*tasks)
    assert peak == 2 and await _active(name) == 0


async def test_a_slot_comes_back_after_an_exception_and_a_cancellation():
    name = _name("release")
    await ensure_limit(name, 1)
    slots = GlobalSlots(name)
    async with asyncio.timeout(GUARD_S):
        with pytest.raises(RuntimeError):
            async with slots:
                assert await _active(name) == 1
                raise RuntimeError("a step failed")
        assert await _active(name) == 0
        holding = asyncio.Event()

        async def hold() -> None:
            async with slots:
                holding.set()
                await asyncio.Event().wait()

        holder = asyncio.create_task(hold())
        await holding.wait()
        assert await _active(name) == 1
        follower = asyncio.create_task(_enter_and_leave(slots))  # waits: the one slot is held
        holder.cancel()
        await asyncio.gather(holder, return_exceptions=True)
        assert holder.cancelled()
        await follower  # the cancelled holder's slot went to the one waiting
        await _enter_and_leave(slots)
    assert await _active(name) == 0


async def test_a_cancelled_waiter_leaves_no_slot_behind():
    name = _name("waiter")
    await ensure_limit(name, 1)
    slots = GlobalSlots(name)
    async with asyncio.timeout(GUARD_S):
        holding, leave = asyncio.Event(), asyncio.Event()

        async def hold() -> None:
            async with slots:
                holding.set()
                await leave.wait()

        holder = asyncio.create_task(hold())
        await holding.wait()
        assert await _active(name) == 1
        waiting = asyncio.create_task(_enter_and_leave(slots))
        await asyncio.sleep(0)  # let it start waiting (a cancellation before that is trivially fine)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        leave.set()
        await holder
        await _enter_and_leave(slots)  # a slot granted to the cancelled waiter was given back
    assert await _active(name) == 0


async def _enter_and_leave(slots: GlobalSlots) -> None:
    async with slots:
        pass


async def test_ensure_limit_refuses_another_size_in_one_line():
    name = _name("size")
    await ensure_limit(name, 3)
    await ensure_limit(name, 3)  # the same size again: fine
    with pytest.raises(ConfigError) as refused:
        await ensure_limit(name, 5)
    message = str(refused.value)
    assert "\n" not in message and name in message and "3 slots" in message and "asks for 5" in message


async def test_run_limits_are_created_with_the_configured_sizes_and_deleted():
    config = CONFIG.model_copy(update={"query_concurrency": 3, "judge_concurrency": 2})
    identity = RunIdentity(model="qwen3.8-max", run_id=str(uuid.uuid4()))
    names = await create_run_limits(identity, config)
    assert names.questions == identity.key("questions") and names.judgments == identity.key("judgments")
    assert [slots.name for slots in run_limits(identity, config)] == [names.questions, names.judgments]
    async with get_client() as client:
        sizes = [(await client.read_global_concurrency_limit_by_name(n)).limit
                 for n in (names.questions, names.judgments)]
        assert sizes == [3, 2]
        await delete_run_limits(names)
        for name in (names.questions, names.judgments):
            with pytest.raises(ObjectNotFound):
                await client.read_global_concurrency_limit_by_name(name)
    await delete_run_limits(names)  # already gone: fine


def _pairs(sim) -> threading.Barrier:
    """Each request waits in the simulator until a second one is in flight: with a limit of 2 they
    pass in pairs; a gate letting one through at a time would break the barrier (a failed request),
    one letting three through would show in `max_in_flight`."""
    barrier = threading.Barrier(2, timeout=GUARD_S / 3)
    sim.on_started = lambda entry: barrier.wait()
    return barrier


async def test_the_endpoint_gate_bounds_both_roles_at_the_simulator(sim):
    config = CONFIG.model_copy(update={"endpoint_limit": 2})
    sim.latency_s = 0.2
    _pairs(sim)
    candidate, judge = (Endpoint.simulated(role, config, sim.base_url) for role in ("candidate", "judge"))
    assert endpoint_limit_name(candidate, config) == endpoint_limit_name(judge, config)  # one endpoint
    models = [build_chat_model(candidate, config.candidate, await endpoint_gate(candidate, config)),
              build_chat_model(judge, config.judge, await endpoint_gate(judge, config))]
    assert config.candidate.stream and not config.judge.stream  # streamed and whole replies both
    try:
        async with asyncio.timeout(GUARD_S):
            await asyncio.gather(*(complete(models[i % 2], f"question {i}") for i in range(6)))
    finally:
        for model in models:
            await close_chat_model(model)
    assert len(sim.requests) == 6 and sim.max_in_flight() == 2
    assert await _active(endpoint_limit_name(candidate, config)) == 0


async def test_a_stream_holds_its_slot_until_it_is_read(sim):
    config = CONFIG.model_copy(update={"endpoint_limit": 1, "endpoint_name": _name("stream")})
    endpoint = Endpoint.simulated("candidate", config, sim.base_url)
    name = endpoint_limit_name(endpoint, config)
    model = build_chat_model(endpoint, config.candidate, await endpoint_gate(endpoint, config))
    try:
        async with asyncio.timeout(GUARD_S):
            from agentscope.message import TextBlock, UserMsg

            chunks = await model(messages=[UserMsg(name="user", content=[TextBlock(text="a long story")])])
            await anext(chunks)  # the reply has begun; its body is not read to the end
            assert await _active(name) == 1
            async for _ in chunks:
                pass
            assert await _active(name) == 0
    finally:
        await close_chat_model(model)


async def test_failed_and_cancelled_requests_give_their_slot_back(sim):
    config = CONFIG.model_copy(update={"endpoint_limit": 1, "endpoint_name": _name("fail")})
    endpoint = Endpoint.simulated("candidate", config, sim.base_url)
    name = endpoint_limit_name(endpoint, config)
    model = build_chat_model(endpoint, config.candidate, await endpoint_gate(endpoint, config))
    sim.faults = [FaultRule(role="*", contains="fail", kind="http_500")]
    try:
        async with asyncio.timeout(GUARD_S):
            for _ in range(2):  # the second request gets the slot the failed first one gave back
                with pytest.raises(Exception):
                    await complete(model, "fail please")
            assert await _active(name) == 0
            loop, started, finish = asyncio.get_running_loop(), asyncio.Event(), threading.Event()
            sim.on_started = lambda entry: (loop.call_soon_threadsafe(started.set), finish.wait(GUARD_S))
            request = asyncio.create_task(complete(model, "cancel me"))
            await started.wait()
            assert await _active(name) == 1
            request.cancel()
            await asyncio.gather(request, return_exceptions=True)
            assert await _active(name) == 0
            finish.set()
    finally:
        finish.set()
        await close_chat_model(model)


def test_a_run_with_an_endpoint_limit_stays_within_it_and_leaves_the_limit(sample_root, tmp_path, monkeypatch, sim):
    from prefect.settings import PREFECT_API_URL

    from e2e.runs import run_cli, summary

    monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())  # the session's server is external
    sim.latency_s = 0.05
    key = _name("run")
    code, run = run_cli(monkeypatch, sim, sample_root, tmp_path / "out", "--users", "0", "--endpoint-limit", "2",
                        "--endpoint-key", key)
    assert code == 0 and summary(run).scored == summary(run).expected > 0
    assert len(sim.requests) > 2 and sim.max_in_flight() <= 2  # ingest, answers and judgments alike
    with get_client(sync_client=True) as client:
        shared = client.read_global_concurrency_limit_by_name(f"mobilemem-endpoint-{key}")
    assert (shared.limit, shared.active_slots) == (2, 0)  # shared between evaluations: kept, nothing held


def test_an_endpoint_limit_of_another_size_is_refused_before_the_run_exists(sample_root, tmp_path, monkeypatch,
                                                                             sim, capsys):
    from prefect.settings import PREFECT_API_URL

    from e2e.runs import run_cli

    monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())
    key = _name("sized")
    with get_client(sync_client=True) as client:
        client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=f"mobilemem-endpoint-{key}", limit=3))
    code, run = run_cli(monkeypatch, sim, sample_root, tmp_path / "out", "--endpoint-limit", "2",
                        "--endpoint-key", key)
    [line] = capsys.readouterr().err.strip().splitlines()[-1:]
    assert code == 1 and not run.root.exists() and not sim.requests
    assert f"mobilemem-endpoint-{key} exists with 3 slots, this run asks for 2" in line
