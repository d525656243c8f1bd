"""Processes of the benchmarks, seen through /proc (Linux only): the memory of a process, the
members of a process group, a background VmRSS sampler, and starting / stopping a command as its
own process group so that nothing outlives a benchmark."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

PROC = Path("/proc")


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


class RssSampler:
    """Samples ``VmRSS`` of one process every ``interval`` seconds in a daemon thread:
    ``samples`` is a list of ``(unix time, bytes)``. Stops by itself when the process is gone."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        self.pid, self.interval = pid, interval
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"rss-{pid}", daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            rss = status_bytes(self.pid, "VmRSS")
            if rss is not None:
                self.samples.append((time.time(), rss))
            elif self.samples or not os.path.exists(PROC / str(self.pid)):
                return
            if self._stop.wait(self.interval):
                return


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
