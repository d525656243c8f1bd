"""Starting a Prefect task or subflow run when the Prefect API is busy; running sibling steps so
that one failure stops them all.

A Prefect server on SQLite answers 503 while its database is locked; past the client's own retries
the call that creates a task or subflow run raises before the step's body has run. Nothing of the
evaluation happened then, so the run is started again, at most ATTEMPTS times with a growing pause:
this repeats bookkeeping, never a model request. Once the body has begun (`mark_started`), any
failure propagates as before: a started step is never run twice.
A subflow is created with a lock held until its body has begun (`creating`): SQLite fails at once,
with no busy wait, the transactions of runs created side by side (each reads, then writes), so the
user subflows that start together were created one 503 and one client backoff (2-6 s) late.
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
_started: ContextVar[asyncio.Event | None] = ContextVar("mobilemem_run_started", default=None)


def mark_started() -> None:
    """Called first thing in a task's or subflow's body: from here on, it is never started again."""
    if (began := _started.get()) is not None:
        began.set()


async def start_patiently(call: Callable[[], Awaitable[T]], what: str, creating: asyncio.Lock | None = None) -> T:
    """`call()` (started again while nothing of it has run); with `creating`, no other run that
    takes it is being created meanwhile."""
    attempt = 1
    while True:
        started = asyncio.Event()
        token = _started.set(started)
        try:
            return await (_created_alone(call, started, creating) if creating is not None else call())
        except (PrefectHTTPStatusError, httpx.TransportError) as exc:
            if started.is_set() or attempt == ATTEMPTS:
                raise
            log.warning("the Prefect API did not start %s (%s); starting it again in %.0f s (attempt %d of %d)",
                        what, describe(exc), PAUSE_S * attempt, attempt + 1, ATTEMPTS)
        finally:
            _started.reset(token)
        await asyncio.sleep(PAUSE_S * attempt)
        attempt += 1


async def _created_alone(call: Callable[[], Awaitable[T]], began: asyncio.Event, creating: asyncio.Lock) -> T:
    """`call()`, holding `creating` until its body has begun or it has ended."""
    async with creating:
        run = asyncio.ensure_future(call())  # a task: it keeps this context, and `began`
        waiting = asyncio.ensure_future(began.wait())
        try:
            await asyncio.wait([run, waiting], return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled while it is being created: so is the run
            run.cancel()
            await asyncio.gather(run, return_exceptions=True)
            raise
        finally:
            waiting.cancel()
    return await run


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
