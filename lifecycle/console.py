"""The process a command-line run lives in: its console (one compact progress line per change; the
flow and task runs' own logs go to the Prefect API and run.log) and the settings of Prefect's
embedded server and client."""

from __future__ import annotations

import logging
import os
import sys


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
