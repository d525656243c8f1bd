"""Starting a Prefect task or subflow run when the Prefect API is busy; running sibling steps so
that one failure stops them all.

A Prefect server on SQLite answers 503 while its database is locked; past the client's own retries
the call that creates a task or subflow run raises before the step's body has run. Nothing of the
evaluation happened then, so the run is started again, at most ATTEMPTS times with a growing pause:
this repeats bookkeeping, never a model request. Once the body has begun (`mark_started`), any
failure propagates as before: a started step is never run twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from typing import TypeVar

import httpx
from prefect.exceptions import PrefectHTTPStatusError

from mobilemem.errors import describe

log = logging.getLogger(__name__)
T = TypeVar("T")
ATTEMPTS = 4
PAUSE_S = 10.0
_started: ContextVar[list[bool] | None] = ContextVar("mobilemem_run_started", default=None)


def mark_started() -> None:
    """Called first thing in a task's or subflow's body: from here on, it is never started again."""
    if (flag := _started.get()) is not None:
        flag.append(True)


async def start_patiently(call: Callable[[], Awaitable[T]], what: str) -> T:
    attempt = 1
    while True:
        started: list[bool] = []
        token = _started.set(started)
        try:
            return await call()
        except (PrefectHTTPStatusError, httpx.TransportError) as exc:
            if started or attempt == ATTEMPTS:
                raise
            log.warning("the Prefect API did not start %s (%s); starting it again in %.0f s (attempt %d of %d)",
                        what, describe(exc), PAUSE_S * attempt, attempt + 1, ATTEMPTS)
        finally:
            _started.reset(token)
        await asyncio.sleep(PAUSE_S * attempt)
        attempt += 1


async def all_or_none(coroutines: Iterable[Awaitable[object]]) -> None:
    """Run the coroutines together; the first to raise cancels the others, which are awaited before
    its exception propagates (so nothing still runs when the caller closes what they share).
    asyncio.TaskGroup would do it, but on Python 3.11 it leaves its parent task marked as cancelled
    when a child fails while the group is already exiting."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION) if tasks else None
    finally:  # also when this task itself is cancelled
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()
