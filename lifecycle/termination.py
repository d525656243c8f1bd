"""While the flow runs, a termination signal always reaches it (the command's side is `cli.signals`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

from prefect.exceptions import TerminationSignal


@contextmanager
def signals_reach_the_flow() -> Iterator[None]:
    """While the flow runs, a termination signal that lands inside an asyncio callback (Prefect raises
    TerminationSignal wherever the main thread happens to be; asyncio's callbacks and transports
    swallow any BaseException but KeyboardInterrupt, failing a connection instead) cancels the flow,
    as SIGINT does, instead of being lost."""
    loop, flow_task = asyncio.get_running_loop(), asyncio.current_task()
    previous = loop.get_exception_handler()

    def handler(loop: asyncio.AbstractEventLoop, context: dict) -> None:
        if isinstance(context.get("exception"), TerminationSignal) and flow_task is not None:
            flow_task.cancel()
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
    try:
        yield
    finally:
        loop.set_exception_handler(previous)
