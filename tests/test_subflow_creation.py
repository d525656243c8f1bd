"""`start_patiently(..., creating=lock)`: a run is created only when no other run taking the same
lock is being created, i.e. after the one before it has begun its body (`mark_started`) or ended;
cancelled while being created, the run is cancelled with it. Plain asyncio runs stand in for the
subflows; the events are the ones the subflow body sets."""

import asyncio

import pytest

from lifecycle.orchestration import mark_started, start_patiently


class Runs:
    """Each run logs `created <n>` when its creation begins, then waits for its release, then begins."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.release = {n: asyncio.Event() for n in range(3)}

    async def run(self, n: int, fail: bool = False) -> int:
        self.log.append(f"created {n}")
        await self.release[n].wait()
        if fail:
            raise RuntimeError(f"run {n} ended before its body")
        mark_started()
        self.log.append(f"began {n}")
        await asyncio.sleep(0)
        return n


async def _until(condition) -> None:
    while not condition():
        await asyncio.sleep(0)


def test_the_next_run_is_created_only_after_the_one_before_began():
    async def scenario():
        runs, lock = Runs(), asyncio.Lock()
        tasks = [asyncio.ensure_future(start_patiently(lambda n=n: runs.run(n), f"run {n}", lock)) for n in range(3)]
        await _until(lambda: runs.log)
        for _ in range(20):
            await asyncio.sleep(0)
        assert runs.log == ["created 0"]  # 1 and 2 wait for the lock
        for n in range(3):
            runs.release[n].set()
            await _until(lambda n=n: f"began {n}" in runs.log)
        assert await asyncio.gather(*tasks) == [0, 1, 2]
        return runs.log

    assert asyncio.run(scenario()) == ["created 0", "began 0", "created 1", "began 1", "created 2", "began 2"]


def test_a_run_that_ends_before_its_body_lets_the_next_one_be_created():
    async def scenario():
        runs, lock = Runs(), asyncio.Lock()
        first = asyncio.ensure_future(start_patiently(lambda: runs.run(0, fail=True), "run 0", lock))
        second = asyncio.ensure_future(start_patiently(lambda: runs.run(1), "run 1", lock))
        runs.release[0].set()
        with pytest.raises(RuntimeError, match="ended before its body"):
            await first
        runs.release[1].set()
        assert await second == 1
        return runs.log

    assert asyncio.run(scenario()) == ["created 0", "created 1", "began 1"]


def test_cancelled_while_being_created_the_run_is_cancelled_and_the_lock_freed():
    async def scenario():
        runs, lock = Runs(), asyncio.Lock()
        first = asyncio.ensure_future(start_patiently(lambda: runs.run(0), "run 0", lock))
        await _until(lambda: runs.log)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert not lock.locked()
        runs.release[0].set()  # the cancelled run never begins
        runs.release[1].set()
        assert await start_patiently(lambda: runs.run(1), "run 1", lock) == 1
        return runs.log

    assert asyncio.run(scenario()) == ["created 0", "created 1", "began 1"]
