"""A termination signal that Prefect raises inside an asyncio callback (where asyncio swallows it)
still stops the flow: `signals_reach_the_flow` turns it into the flow task's cancellation."""

import asyncio
import signal

import pytest
from prefect.exceptions import TerminationSignal

from lifecycle.console import signals_reach_the_flow


def _raise_signal() -> None:
    raise TerminationSignal(signal=signal.SIGTERM)


async def _flow(seconds: float) -> str:
    with signals_reach_the_flow():
        asyncio.get_running_loop().call_soon(_raise_signal)  # a callback, as a socket transport's read is
        await asyncio.sleep(seconds)
        return "finished"


def test_a_signal_swallowed_by_a_callback_cancels_the_flow():
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(_flow(5))


def test_other_callback_errors_still_go_to_the_previous_handler():
    seen = []

    async def flow() -> str:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: seen.append(context["exception"]))
        with signals_reach_the_flow():
            asyncio.get_running_loop().call_soon(lambda: 1 / 0)
            await asyncio.sleep(0.05)
            return "finished"

    assert asyncio.run(flow()) == "finished"
    assert [type(e) for e in seen] == [ZeroDivisionError]
