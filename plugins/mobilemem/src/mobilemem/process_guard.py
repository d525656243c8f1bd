"""Nothing the runner starts outlives it, even after `kill -9` of the runner (Linux).

Prefect starts its embedded API server as a child process; if the runner is killed it would keep
running. `guard_descendants()` forks a small watchdog that keeps a list of the runner's descendants
(read from /proc every `interval_s`) and, as soon as the runner is gone, sends each of them SIGTERM,
then SIGKILL to those still there. It never touches the runner's process group, so a shell's job
control, a parent test runner or a deployment worker are left alone. `stop()` ends the watchdog
when the runner exits normally.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in (PROC / str(pid) / "task").glob("*"):
        try:
            found |= {int(child) for child in (task / "children").read_text().split()}
        except (OSError, ValueError):
            continue
    return found


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat: tells a process from a later one that reused its pid."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def descendants(pid: int) -> dict[int, str]:
    """Every living descendant of `pid`, with its start time."""
    found: dict[int, str] = {}
    todo = list(_children(pid))
    while todo:
        child = todo.pop()
        if child in found or (started := _start_time(child)) is None:
            continue
        found[child] = started
        todo += _children(child)
    return found


def _watch(runner: int, interval_s: float) -> None:
    known: dict[int, str] = {}
    while os.getppid() == runner:
        known.update(descendants(runner))
        known = {pid: started for pid, started in known.items() if _start_time(pid) == started}
        time.sleep(interval_s)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid, started in known.items():
            if pid != os.getpid() and _start_time(pid) == started:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        time.sleep(1.0)


@dataclass
class Guard:
    pid: int | None

    def stop(self) -> None:
        if self.pid is None:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (OSError, ChildProcessError):
            pass
        self.pid = None


def guard_descendants(interval_s: float = 0.5) -> Guard:
    """Fork the watchdog (before any thread or event loop of the run exists)."""
    if not PROC.is_dir():
        return Guard(None)
    runner = os.getpid()
    pid = os.fork()
    if pid == 0:  # the watchdog: no logging, no locks, nothing but /proc and signals
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the runner's to handle
            _watch(runner, interval_s)
        finally:
            os._exit(0)
    return Guard(pid)
