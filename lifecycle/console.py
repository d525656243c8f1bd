"""The process a command-line run lives in: its console (one compact progress line per change; the
flow and task runs' own logs go to the Prefect API and run.log) and the settings of Prefect's
embedded server and client; and how a termination signal always reaches the flow."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from prefect.exceptions import TerminationSignal


# Background services of Prefect's embedded server that a single in-process run never needs; they
# only compete with the run for the SQLite database ("database is locked" in the server's log).
EMBEDDED_SERVER_QUIET = {f"PREFECT_SERVER_{name}": "false" for name in (
    "ANALYTICS_ENABLED", "SERVICES_SCHEDULER_ENABLED", "SERVICES_LATE_RUNS_ENABLED", "SERVICES_FOREMAN_ENABLED",
    "SERVICES_PAUSE_EXPIRATIONS_ENABLED", "SERVICES_REPOSSESSOR_ENABLED", "SERVICES_CANCELLATION_CLEANUP_ENABLED",
    "SERVICES_CLEANUP_RECONCILER_ENABLED")}


# A Prefect server on SQLite answers 503 while its database is busy; the client retries with
# backoff. Bookkeeping must never cost a user's evaluation, so it waits longer than by default.
CLIENT_PATIENCE = {"PREFECT_CLIENT_MAX_RETRIES": "10"}


def _not_run_logs(record: logging.LogRecord) -> bool:
    return not record.name.startswith(("prefect.flow_runs", "prefect.task_runs"))


def _console_logging() -> None:
    """One compact progress line per change on stderr. The flow and task runs' own logs (a failed
    step's state among them) go to the Prefect API and run.log, not to the console."""
    progress = logging.getLogger("mobilemem.progress")
    if not any(getattr(h, "mobilemem_console", False) for h in progress.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        handler.mobilemem_console = True  # type: ignore[attr-defined]
        progress.addHandler(handler)
    logging.getLogger("mobilemem").propagate = False  # run.log still gets it (run_setup)
    for handler in logging.getLogger().handlers:
        if _not_run_logs not in handler.filters:
            handler.addFilter(_not_run_logs)
    for name in ("prefect", "prefect.task_runs", "as"):  # a task run logs a warning or a failure, not each success
        logging.getLogger(name).setLevel(logging.WARNING)
    for name in ("EventsWorker", "APILogWorker"):  # "still processing items" while they drain at exit
        logging.getLogger(name).setLevel(logging.ERROR)
    logging.getLogger("prefect.flow_runs").setLevel(logging.INFO)


def configure() -> None:
    """Before the flow starts: the console and the embedded server's environment (a user's own
    PREFECT_* variables win)."""
    _console_logging()
    for name, value in {**EMBEDDED_SERVER_QUIET, **CLIENT_PATIENCE}.items():
        os.environ.setdefault(name, value)


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
