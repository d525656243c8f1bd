"""The process a command-line run lives in: its console (one compact progress line per change; the
flow and task runs' own logs go to the Prefect API and run.log) and the settings of Prefect's
embedded server and client; and how a termination signal always reaches the flow.

Signals land anywhere: inside a library's callback, a finalizer, Prefect's own code, where a raised
exception can be swallowed. So SIGINT and SIGTERM are taken by the event loop
(`loop.add_signal_handler`, woken through its wakeup fd whatever handler Prefect installs on top):
the first cancels the run, later ones only count, and the command's exit status comes from what
was received (`interrupted()`), not from which exception got through. Outside the loop a signal
is only noted. What Python reports as "Exception ignored in ..." goes to run.log, not the console."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from prefect.exceptions import TerminationSignal
from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_CLIENT_MAX_RETRIES,
    PREFECT_SERVER_EPHEMERAL_ENABLED,
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
    temporary_settings,
)

from mobilemem.errors import MobilememError, describe

T = TypeVar("T")
LIBRARY_LOGGERS = ("as", "bm25s")  # AgentScope's and bm25s's loggers, which print to the console themselves
SIGNALS = (signal.SIGINT, signal.SIGTERM)
log = logging.getLogger(__name__)
_received: list[int] = []


# Background services of Prefect's embedded server that a single in-process run never needs; they
# only compete with the run for the SQLite database ("database is locked" in the server's log).
EMBEDDED_SERVER_QUIET = {f"PREFECT_SERVER_{name}": "false" for name in (
    "ANALYTICS_ENABLED", "SERVICES_SCHEDULER_ENABLED", "SERVICES_LATE_RUNS_ENABLED", "SERVICES_FOREMAN_ENABLED",
    "SERVICES_PAUSE_EXPIRATIONS_ENABLED", "SERVICES_REPOSSESSOR_ENABLED", "SERVICES_CANCELLATION_CLEANUP_ENABLED",
    "SERVICES_CLEANUP_RECONCILER_ENABLED")}


# Defaults for Prefect's own settings (a user's PREFECT_* variables and profile win), applied the
# way Prefect reads them (a settings context: its settings are read at import, environment
# variables set later change nothing). A Prefect server on SQLite answers 503 while its database
# is busy and the client retries with backoff: bookkeeping must never cost a user's evaluation, so
# it waits longer than by default; and a loaded 2-core machine starts the embedded server in far
# more than Prefect's 20 s.
PREFECT_DEFAULTS = {PREFECT_CLIENT_MAX_RETRIES: 10, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS: 180}


class ServerNotStarted(MobilememError):
    """Prefect's embedded API server did not start."""


class _Stderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is now (a caller may have replaced it since, e.g. a test)."""

    @property  # type: ignore[override]
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def _not_run_logs(record: logging.LogRecord) -> bool:
    return not record.name.startswith(("prefect.flow_runs", "prefect.task_runs"))


def _console_logging() -> None:
    """One compact progress line per change on stderr. The flow and task runs' own logs (a failed
    step's state among them) go to the Prefect API and run.log, not to the console."""
    progress = logging.getLogger("mobilemem.progress")
    if not any(getattr(h, "mobilemem_console", False) for h in progress.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        handler.mobilemem_console = True  # type: ignore[attr-defined]
        progress.addHandler(handler)
    logging.getLogger("mobilemem").propagate = False  # run.log still gets it (run_setup)
    for handler in logging.getLogger().handlers:
        if _not_run_logs not in handler.filters:
            handler.addFilter(_not_run_logs)
    for name in ("prefect", "prefect.task_runs", "as"):  # a task run logs a warning or a failure, not each success
        logging.getLogger(name).setLevel(logging.WARNING)
    for name in LIBRARY_LOGGERS:  # their own console handlers go: their lines are for run.log (run_log)
        library = logging.getLogger(name)
        library.handlers = [h for h in library.handlers if type(h) is not logging.StreamHandler]
        library.propagate = False
    for name in ("EventsWorker", "APILogWorker"):  # "still processing items" while they drain at exit
        logging.getLogger(name).setLevel(logging.ERROR)
    logging.getLogger("prefect.flow_runs").setLevel(logging.INFO)
    log.propagate = False  # its lines (signals, ignored exceptions) are for run.log only


def configure() -> None:
    """Before the flow starts: the console and the embedded server's environment (a user's own
    PREFECT_* variables win)."""
    _console_logging()
    sys.unraisablehook = _unraisable_to_log
    for name, value in EMBEDDED_SERVER_QUIET.items():  # read by the server's own process when it starts
        os.environ.setdefault(name, value)


@contextmanager
def prefect_settings() -> Iterator[None]:
    """PREFECT_DEFAULTS for the command (and every flow, task and thread it starts in this context)."""
    with temporary_settings(set_defaults=PREFECT_DEFAULTS):
        yield


def start_embedded_server(log_path: Path) -> None:
    """Prefect's embedded API server, when no PREFECT_API_URL is set: started before the flow, so a
    server that does not come up within its start-up budget is one line (ServerNotStarted), and a
    signal meanwhile interrupts the wait. Its own output (uvicorn's errors, its noise when it is
    stopped after the runner was killed) goes to `log_path`, never to the console."""
    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return
    from prefect.server.api.server import SubprocessASGIServer

    try:
        with _output_to(log_path):  # the server process inherits these descriptors when it is spawned
            SubprocessASGIServer().start()
    except RuntimeError as exc:
        timeout = PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
        raise ServerNotStarted(
            f"Prefect's embedded API server did not start within {timeout} s (a busy machine?): set "
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS higher, or start a server (prefect server start) "
            f"and set PREFECT_API_URL ({describe(exc)[:200]})") from None


@contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """This process's stdout and stderr (the file descriptors) point at `path` inside the block."""
    sys.stdout.flush()
    sys.stderr.flush()
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = (os.dup(1), os.dup(2))
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (target, *saved):
            os.close(fd)


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


def _unraisable_to_log(unraisable: sys.UnraisableHookArgs) -> None:
    """An exception Python could not raise (in a finalizer or a callback): a run.log line."""
    if isinstance(unraisable.exc_value, (TerminationSignal, KeyboardInterrupt)):
        log.info("a termination signal arrived inside %r (the run is stopped by the event loop)", unraisable.object)
    else:
        log.warning("exception ignored in %r: %s", unraisable.object, describe(unraisable.exc_value))


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
