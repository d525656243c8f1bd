"""What the Prefect server went through during one benchmark run, each from the party that knows:

- the 503s it answered: its own log. With PREFECT_SERVER_LOG_RETRYABLE_ERRORS (bench/harness.py) the
  server logs one "Encountered retryable exception in request" line in the exception handler that
  turns a retryable database error into a 503 (prefect/server/api/server.py), which is where an API
  request's 503 comes from. Counted from the byte offset where the run began (one server serves
  every run of a benchmark);
- the client's retries and their waits: the runner's stderr, where Prefect's client
  (prefect/client/base.py) logs each retry at DEBUG with the wait it then sleeps, once
  PREFECT_LOGGING_LOGGERS_PREFECT_CLIENT_LEVEL=DEBUG turns on that one logger (RUNNER_ENV);
- how many flow runs, task runs and artifacts it holds: its API, before and after the run. The server
  records task runs from their events in batches, at least every flush interval (5 s by default),
  so after a run the count is read until it holds still over one interval (`settled_counts`).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

# Only Prefect's client logger at DEBUG: its other DEBUG line ("Connecting to API at ...") comes once per
# client context, not per request.
RUNNER_ENV = {"PREFECT_LOGGING_LOGGERS_PREFECT_CLIENT_LEVEL": "DEBUG"}
SERVER_503 = "Encountered retryable exception in request"
RETRY = re.compile(r"(?:Received response with retryable status code (\d+)|Encountered retryable exception during "
                   r"request)\. Another attempt will be made in ([0-9.]+)s")
COUNTED = ("flow_runs", "task_runs", "artifacts")
FLUSH_INTERVAL_S = 5.0  # PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL's default


@dataclass(frozen=True)
class ClientRetries:
    after_503: int
    other: int  # after a 429 or 502, or a connection error or timeout
    wait_s: float  # every retry's wait, summed (retries in parallel requests overlap)


def client_retries(stderr: Path) -> ClientRetries:
    after_503 = other = 0
    wait = 0.0
    for match in RETRY.finditer(stderr.read_text(errors="replace")):
        if match.group(1) == "503":
            after_503 += 1
        else:
            other += 1
        wait += float(match.group(2))
    return ClientRetries(after_503, other, wait)


def log_size(log: Path) -> int:
    return log.stat().st_size if log.exists() else 0


def server_503s(log: Path, offset: int) -> int:
    """The 503s the server logged after byte `offset` of its log."""
    with log.open("rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace").count(SERVER_503)


def object_counts(api: str) -> dict[str, int]:
    """How many flow runs, task runs and artifacts the server holds (every version of an artifact)."""
    with httpx.Client(timeout=60, trust_env=False) as client:
        return {kind: _count(client, f"{api}/{kind}/count") for kind in COUNTED}


def _count(client: httpx.Client, url: str) -> int:
    for _ in range(10):  # a busy SQLite answers 503 to the bench too
        response = client.post(url, json={})
        if response.status_code != 503:
            break
        time.sleep(1)
    return int(response.raise_for_status().json())


def settled_counts(api: str, timeout_s: float = 120.0) -> dict[str, int]:
    """`object_counts` once two reads one flush interval apart agree (or at the timeout)."""
    deadline = time.monotonic() + timeout_s
    counts = object_counts(api)
    while time.monotonic() < deadline:
        time.sleep(FLUSH_INTERVAL_S + 1)
        counts, previous = object_counts(api), counts
        if counts == previous:
            break
    return counts
