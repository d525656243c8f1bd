"""How a termination signal reaches a command (DESIGN §8). Signals land anywhere: inside a library's
callback, a finalizer, Prefect's own code, where a raised exception can be swallowed. So SIGINT and
SIGTERM are taken by the event loop (`loop.add_signal_handler`, woken through its wakeup fd whatever
handler Prefect installs on top): the first cancels the run, later ones only count, and the command's
exit status comes from what was received (`interrupted()`), not from which exception got through.
Outside the loop a signal is only noted. Inside the flow, `lifecycle.termination` does the rest."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")
SIGNALS = (signal.SIGINT, signal.SIGTERM)
log = logging.getLogger(__name__)
_received: list[int] = []


def interrupted() -> bool:
    """Whether SIGINT or SIGTERM reached this process since `catch_signals`."""
    return bool(_received)


def _note(signum: int, _frame: object = None) -> None:
    _received.append(signum)
    log.info("received signal %d", signum)


def _stop_start_up(signum: int, frame: object = None) -> None:
    """Before the event loop runs (Prefect's server starting): the first signal stops what runs."""
    first = not _received
    _note(signum, frame)
    if first:
        raise KeyboardInterrupt


@contextmanager
def catch_signals() -> Iterator[None]:
    """For one command: SIGINT and SIGTERM (even if a shell started us with SIGINT ignored) stop the
    start-up, then the event loop's run (`stopped_by_signals`); after it they are only noted. The
    previous handlers come back afterwards."""
    _received.clear()
    previous = {signum: signal.signal(signum, _stop_start_up) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def ignore_signals() -> None:
    """After the command: the interpreter's exit (Prefect's atexit handlers) is never interrupted."""
    for signum in SIGNALS:
        signal.signal(signum, _note)


async def stopped_by_signals(work: Awaitable[T]) -> T:
    """Await `work` in this task; the first SIGINT/SIGTERM cancels it, later ones are only noted."""
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None

    def on_signal(signum: int) -> None:
        first = not _received
        _note(signum)
        if first:
            task.cancel()

    for signum in SIGNALS:
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        if _received:  # it arrived before the loop ran
            raise asyncio.CancelledError
        return await work
    finally:
        if asyncio.iscoroutine(work):
            work.close()  # never started when the signal came first
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)
            signal.signal(signum, _note)
