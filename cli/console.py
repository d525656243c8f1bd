"""The process a command-line run lives in: its console (one compact progress line per change; the
flow and task runs' own logs go to the Prefect API and run.log) and the settings of Prefect's
embedded server and client (how signals stop it: `cli.signals`). What Python reports as "Exception
ignored in ..." goes to run.log, not the console."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prefect.exceptions import TerminationSignal
from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_CLIENT_MAX_RETRIES,
    PREFECT_SERVER_EPHEMERAL_ENABLED,
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
    temporary_settings,
)

from mobilemem.errors import MobilememError, describe
from cli import signals

LIBRARY_LOGGERS = ("as", "bm25s")  # AgentScope's and bm25s's loggers, which print to the console themselves
log = logging.getLogger(__name__)


# Prefect's embedded server, set up for one run on SQLite (bench/README.md, issue 24); read by the
# server's own process when it starts, and used by the benchmarks' server too. Background services
# a single run never needs are off: they only compete with the run for SQLite's one writer
# ("database is locked" in the server's log), and so do the triggers (automations). Task-run
# states and events are written 200 to a transaction instead of one each.
EMBEDDED_SERVER_SETTINGS = {
    **{f"PREFECT_SERVER_{name}": "false" for name in (
        "ANALYTICS_ENABLED", "SERVICES_SCHEDULER_ENABLED", "SERVICES_LATE_RUNS_ENABLED", "SERVICES_FOREMAN_ENABLED",
        "SERVICES_PAUSE_EXPIRATIONS_ENABLED", "SERVICES_REPOSSESSOR_ENABLED", "SERVICES_CANCELLATION_CLEANUP_ENABLED",
        "SERVICES_CLEANUP_RECONCILER_ENABLED", "SERVICES_TRIGGERS_ENABLED")},
    **{f"PREFECT_SERVER_SERVICES_{name}": "200" for name in (
        "TASK_RUN_RECORDER_BATCH_SIZE", "TASK_RUN_RECORDER_READ_BATCH_SIZE", "EVENT_PERSISTER_BATCH_SIZE",
        "EVENT_PERSISTER_READ_BATCH_SIZE")},
}


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
    for own in (log, signals.log):  # their lines (signals, ignored exceptions) are for run.log only
        own.propagate = False


def configure() -> None:
    """Before the flow starts: the console and the embedded server's environment (a user's own
    PREFECT_* variables win)."""
    _console_logging()
    sys.unraisablehook = _unraisable_to_log
    for name, value in EMBEDDED_SERVER_SETTINGS.items():  # read by the server's own process when it starts
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


def _unraisable_to_log(unraisable: sys.UnraisableHookArgs) -> None:
    """An exception Python could not raise (in a finalizer or a callback): a run.log line."""
    if isinstance(unraisable.exc_value, (TerminationSignal, KeyboardInterrupt)):
        log.info("a termination signal arrived inside %r (the run is stopped by the event loop)", unraisable.object)
    else:
        log.warning("exception ignored in %r: %s", unraisable.object, describe(unraisable.exc_value))
