"""Processes of the benchmarks, seen through /proc (Linux only): the memory of a process, the
members of a process group, a background VmRSS sampler, the CPU of a process tree and a background
CPU sampler, and starting / stopping a command as its own process group so that nothing outlives a
benchmark."""

from __future__ import annotations

import bisect
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Self

PROC = Path("/proc")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def status_bytes(pid: int, field: str) -> int | None:
    """A ``kB`` field of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``, ...) in bytes; None once the
    process is gone (or a zombie, which has no memory fields)."""
    try:
        text = (PROC / str(pid) / "status").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == field:
            number, _, unit = value.strip().partition(" ")
            return int(number) * (1024 if unit.strip() == "kB" else 1)
    return None


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state is [0], pgrp is [2])."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return text[text.rfind(")") + 2:].split()


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    members = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
                members.append(int(entry.name))
    return sorted(members)


class _Sampler:
    """A daemon thread that calls `_tick` every ``interval`` seconds, from `__enter__` until
    `__exit__` or until `_tick` returns False."""

    def __init__(self, interval: float, name: str) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while self._tick() and not self._stop.wait(self.interval):
            pass

    def _tick(self) -> bool:
        raise NotImplementedError


class RssSampler(_Sampler):
    """Samples ``VmRSS`` of one process every ``interval`` seconds in a daemon thread:
    ``samples`` is a list of ``(unix time, bytes)``. Stops by itself when the process is gone."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        super().__init__(interval, f"rss-{pid}")
        self.pid = pid
        self.samples: list[tuple[float, int]] = []

    def _tick(self) -> bool:
        rss = status_bytes(self.pid, "VmRSS")
        if rss is not None:
            self.samples.append((time.time(), rss))
            return True
        return not self.samples and os.path.exists(PROC / str(self.pid))


def _children(pid: int) -> list[int]:
    children = []
    try:
        for task in (PROC / str(pid) / "task").iterdir():
            children += [int(c) for c in (task / "children").read_text().split()]
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return children


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of a process and every live descendant, each with its reaped
    children's (PostgreSQL's backends, a runner's subprocesses); 0 once the process is gone."""
    ticks, pending = 0, [pid]
    while pending:
        current = pending.pop()
        fields = _stat_fields(current)
        if fields is not None:
            ticks += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
            pending += _children(current)
    return ticks / CLOCK_TICKS


class CpuSampler(_Sampler):
    """Samples `tree_cpu_seconds` of named processes every ``interval`` seconds in a daemon thread,
    so that the CPU spent inside a time window (a run's first request to its last) can be read back
    (`between`), not only over each process's whole life."""

    def __init__(self, interval: float = 0.25) -> None:
        super().__init__(interval, "cpu-sampler")
        self.pids: dict[str, int] = {}
        self.samples: dict[str, list[tuple[float, float]]] = {}

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        self._tick()

    def watch(self, name: str, pid: int) -> None:
        self.samples[name] = [(time.time(), tree_cpu_seconds(pid))]
        self.pids[name] = pid

    def _tick(self) -> bool:
        for name, pid in list(self.pids.items()):
            cpu = tree_cpu_seconds(pid)
            if cpu > 0:
                self.samples[name].append((time.time(), cpu))
        return True

    def between(self, name: str, start: float, end: float) -> float:
        """CPU seconds of `name` from unix time `start` to `end`, interpolated between samples."""
        return self._at(name, end) - self._at(name, start)

    def _at(self, name: str, moment: float) -> float:
        samples = self.samples[name]
        i = bisect.bisect_left(samples, (moment, float("-inf")))
        if i == 0:
            return samples[0][1]
        if i == len(samples):
            return samples[-1][1]
        (t0, c0), (t1, c1) = samples[i - 1], samples[i]
        return c0 + (c1 - c0) * (moment - t0) / (t1 - t0) if t1 > t0 else c1


def start_group(cmd: list[str], env: dict[str, str], log: Path, cwd: Path) -> subprocess.Popen:
    """``cmd`` as the leader of a new process group (and session), stdout and stderr to ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def stop_group(process: subprocess.Popen, grace: float = 20.0) -> None:
    """SIGTERM the process group, SIGKILL whatever is left of it after ``grace`` seconds (leader or
    not), and reap the leader. Safe on a group that has already exited."""
    def signal_group(signum: int) -> None:
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            pass

    signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    while group_members(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    signal_group(signal.SIGKILL)
    process.wait(timeout=10)
