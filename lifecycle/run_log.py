"""run.log: the run's own log, sanitized (no credential, no base64 payload), attached to this
project's loggers and Prefect's run loggers for the run's duration; a line a full disk cannot take
is dropped, never a traceback on the console."""

from __future__ import annotations

import logging

from mobilemem.errors import sanitize
from mobilemem.rundir import RunDir

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
RUN_LOG_LOGGERS = ("mobilemem", "lifecycle", "tasks", "flows", "prefect.flow_runs", "prefect.task_runs", "as",
                   "bm25s")


class _Sanitizing(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = sanitize(record.getMessage()), None
        if record.exc_info and record.exc_info[0] is None:  # Prefect's failed-state lines log exc_info=True
            record.exc_info = None
        return True


class _RunLog(logging.FileHandler):
    """run.log; a line it cannot write (a full disk) is dropped, never a traceback on the console."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        pass

    def close(self) -> None:
        try:
            super().close()
        except OSError:  # its last buffered lines did not fit on a full disk
            pass


def attach(run: RunDir) -> logging.Handler:
    handler = _RunLog(run.log, encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(_Sanitizing())
    for name in RUN_LOG_LOGGERS:
        logging.getLogger(name).addHandler(handler)
    logging.getLogger("mobilemem").setLevel(logging.INFO)
    return handler


def detach(handler: logging.Handler) -> None:
    for name in RUN_LOG_LOGGERS:
        logging.getLogger(name).removeHandler(handler)
    handler.close()
