"""Processes of a benchmark: the simulator, a Prefect server (on SQLite, or on a PostgreSQL of its
own started by deployments/postgres.sh) and the runner, each its own process.

Separate processes keep the simulator's and Prefect's work out of the runner's CPU and memory
figures. Everything started here is stopped by `Processes.close()` (process groups, SIGTERM then
SIGKILL; the PostgreSQL cluster with `postgres.sh stop`, its folder removed), so a benchmark leaves
nothing running.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
POSTGRES_SH = ROOT / "deployments" / "postgres.sh"
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """utime + stime of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@dataclass(frozen=True)
class RunnerStats:
    exit_code: int
    wall_s: float
    cpu_s: float
    peak_rss_mb: float


@dataclass
class Processes:
    started: list[subprocess.Popen] = field(default_factory=list)
    home: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="mobilemem-bench-")))
    databases: list[Path] = field(default_factory=list)

    @property
    def server_log(self) -> Path:
        return self.home / "prefect-server.out"

    def _spawn(self, cmd: list[str], log: Path, env: dict | None = None) -> subprocess.Popen:
        process = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                   start_new_session=True)
        self.started.append(process)
        return process

    def simulator(self, latency: float, log: Path) -> tuple[subprocess.Popen, str]:
        port = free_port()
        process = self._spawn([sys.executable, "-m", "mobilemem.simulator", "--port", str(port),
                               "--latency", str(latency), "--log", str(log)], self.home / f"sim-{port}.out")
        url = f"http://127.0.0.1:{port}/v1"
        _wait(lambda: httpx.get(f"{url}/models", timeout=2).status_code == 200, process, "the simulator")
        return process, url

    def postgres(self) -> tuple[str, int]:
        """A PostgreSQL cluster of its own on a free port (deployments/postgres.sh): its connection URL
        and the postmaster's PID. Its folder is outside `home`, which the postgres user cannot enter."""
        data = Path(tempfile.mkdtemp(prefix="mobilemem-bench-pg-"))
        self.databases.append(data)
        done = subprocess.run([str(POSTGRES_SH), "start", str(data), str(free_port())], capture_output=True,
                              text=True, timeout=900)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            raise RuntimeError(f"PostgreSQL did not start: {last}")
        return done.stdout.strip(), int((data / "postmaster.pid").read_text().split()[0])

    def prefect_server(self, database_url: str | None = None,
                       settings: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
        """`prefect server start` with the embedded server's settings (`settings` override them),
        on SQLite in `home` or on `database_url`. It logs every 503 it answers
        (PREFECT_SERVER_LOG_RETRYABLE_ERRORS) to `server_log`."""
        port = free_port()
        from cli.console import EMBEDDED_SERVER_SETTINGS

        level = os.environ.get("PREFECT_SERVER_LOGGING_LEVEL", "").upper()
        env = {**os.environ, **EMBEDDED_SERVER_SETTINGS, "PREFECT_HOME": str(self.home / "prefect"),
               "PREFECT_SERVER_LOG_RETRYABLE_ERRORS": "true",
               # the 503 lines are errors; INFO (set by the caller) adds uvicorn's access log
               "PREFECT_SERVER_LOGGING_LEVEL": level if level in ("DEBUG", "INFO") else "WARNING", **(settings or {})}
        if database_url:
            env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = database_url
        process = self._spawn([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                               "--port", str(port)], self.server_log, env)
        api = f"http://127.0.0.1:{port}/api"
        _wait(lambda: httpx.get(f"{api}/health", timeout=2).status_code == 200, process, "the Prefect server", 180)
        return process, api

    def runner(self, args: list[str], env: dict[str, str], stderr: Path | None = None,
               started: Callable[[int], None] = lambda pid: None, prefix: tuple[str, ...] = ()) -> RunnerStats:
        """Run `python flows/mobilemem.py ARGS` (under `prefix`, e.g. a profiler that runs it as its
        child) and measure that process and its children (os.wait4); `started` gets its PID as soon
        as it exists."""
        begun = time.perf_counter()
        process = subprocess.Popen([*prefix, sys.executable, "flows/mobilemem.py", *args], cwd=ROOT,
                                   env={**os.environ, **env}, stdout=subprocess.DEVNULL,
                                   stderr=(stderr or self.home / "runner.err").open("w"), start_new_session=True)
        started(process.pid)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        return RunnerStats(exit_code=process.returncode, wall_s=time.perf_counter() - begun,
                           cpu_s=usage.ru_utime + usage.ru_stime, peak_rss_mb=usage.ru_maxrss / 1024)

    def close(self) -> None:
        for process in reversed(self.started):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(timeout=20)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(process.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    process.wait(timeout=10)
        for data in self.databases:
            subprocess.run([str(POSTGRES_SH), "stop", str(data)], capture_output=True, timeout=120)
            shutil.rmtree(data, ignore_errors=True)
        self.databases.clear()


def _wait(check, process: subprocess.Popen, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with status {process.returncode}")
        try:
            if check():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not start within {timeout:.0f} s")


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def overhead_options(parser: argparse.ArgumentParser) -> None:
    """The generated set of bench/overhead.py (and of the profile taken on it)."""
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--images", type=int, default=3)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache")


def overhead_dataset(args: argparse.Namespace) -> Path:
    return cached_dataset(args.cache, users=args.users, sessions=args.sessions, turns=args.turns,
                          images=args.images, questions=args.questions, image_size=(320, 240))


def cached_dataset(cache: Path, **params) -> Path:
    """The generated dataset for `params`, extracted; made once and reused."""
    from generate_sample import generate

    key = "-".join(f"{k}{'x'.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in sorted(params.items()))
    target = cache / key
    if not (target / "image").is_dir():
        partial = cache / f".{key}.partial"
        if partial.exists():
            subprocess.run(["rm", "-rf", str(partial)], check=True)
        generate(partial, extract=True, **params)
        partial.rename(target)
    return target
