"""The simulator's state, apart from its HTTP side (`server`): the request log, the fault rules in
force, the in-flight counters and the latency. Thread-safe: the server's handler threads share it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Callable

from .faults import FaultRule, FaultTable


@dataclass
class LoggedRequest:
    """One chat request. ``reply`` is the completion computed for it (``None`` when a fault sent
    none: HTTP errors, malformed bodies); ``usage`` is the usage object actually sent, if any."""

    id: int
    role: str
    final: bool
    fault: str | None
    status: int
    started: float
    finished: float
    body: dict = field(repr=False)
    usage: dict | None = None
    reply: dict | None = None


class Simulator:
    """A running simulator: its address, request log, fault rules and in-flight counters."""

    def __init__(self, address: tuple[str, int], faults: Sequence[FaultRule], latency_s: float) -> None:
        self._address = address
        self._lock = threading.Lock()
        self._log: list[LoggedRequest] = []
        self._routes: list[str] = []  # "METHOD /path" of every HTTP request, routed or not
        self._table = FaultTable(faults)
        self._ids = itertools.count(1)
        self._in_flight: Counter[str | None] = Counter()
        self._max: Counter[str | None] = Counter()
        self._stopping = threading.Event()
        self.latency_s = latency_s
        self.keep_log = True  # False: no request log in memory (bodies hold every image sent)
        self.on_started: Callable[[LoggedRequest], None] | None = None  # in the request's thread; may block it
        self.on_finished: Callable[[LoggedRequest], None] | None = None

    @property
    def base_url(self) -> str:
        host, port = self._address
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> list[LoggedRequest]:
        with self._lock:
            return list(self._log)

    @property
    def routes(self) -> list[str]:
        with self._lock:
            return list(self._routes)

    def route(self, method: str, path: str) -> None:
        with self._lock:
            self._routes.append(f"{method} {path}")

    def select_fault(self, role: str, *texts: str) -> FaultRule | None:
        """The rule this request of `role` falls under (counting its hit), if any."""
        return self._table.select(role, *texts)

    @property
    def faults(self) -> list[FaultRule]:
        return self._table.rules

    @faults.setter
    def faults(self, rules: Sequence[FaultRule]) -> None:
        self._table = FaultTable(rules)

    def reset(self) -> None:
        """Forget the log, the fault rules (and their hit counts), in-flight maxima, latency and `on_started`."""
        with self._lock:
            self._log.clear()
            self._routes.clear()
            self._max.clear()
        self.faults = ()
        self.latency_s = 0.0
        self.on_started = None

    def max_in_flight(self, role: str | None = None) -> int:
        with self._lock:
            return self._max[role]

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until no request is in flight (e.g. a timed-out one still sleeping)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self._in_flight[None] == 0:
                    return True
            time.sleep(0.01)
        return False

    def begin(self, role: str, final: bool, body: dict, rule: FaultRule | None) -> LoggedRequest:
        now = time.time()
        with self._lock:
            entry = LoggedRequest(next(self._ids), role, final, rule.kind if rule else None, 0, now, now, body)
            if self.keep_log:
                self._log.append(entry)
            for key in (None, role):
                self._in_flight[key] += 1
                self._max[key] = max(self._max[key], self._in_flight[key])
        return entry

    def end(self, entry: LoggedRequest) -> None:
        entry.finished = time.time()
        with self._lock:
            for key in (None, entry.role):
                self._in_flight[key] -= 1
        if self.on_finished is not None:
            self.on_finished(entry)

    def pause(self, seconds: float) -> None:
        """Sleep `seconds`, or less if the simulator stops meanwhile."""
        if seconds > 0:
            self._stopping.wait(seconds)

    def stop(self) -> None:
        """End every pause now: the server is shutting down."""
        self._stopping.set()
