"""deployments/distributed.sh driven from a test: `up` in a folder of its own under /tmp, the
environment a subprocess needs to reach that server, `down` even when the test fails.

The test process itself never talks to this server through Prefect's settings: its own Prefect
settings are the session's (tests/e2e/conftest.py's harness, in-process settings only, never
os.environ), and `os.environ` holds the suite's PREFECT_HOME and quiet/embedded-server variables.
A subprocess gets `Cluster.env`: the caller's environment without any PREFECT_* variable, plus
DIR/env (PREFECT_API_URL, ephemeral mode off) and a PREFECT_HOME inside DIR, so
`python flows/mobilemem.py ...` or `prefect ...` started with it uses the external server only."""

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from conftest import ROOT

SCRIPT = ROOT / "deployments" / "distributed.sh"
POOL = "mobilemem"
UP_TIMEOUT_S = 900  # the first `up` on a machine may install PostgreSQL with apt-get


class NotUp(Exception):
    """`distributed.sh up` failed; the message is its stderr (one line and the log's last lines)."""


@dataclass
class Cluster:
    dir: Path
    env: dict[str, str]  # for every subprocess that must reach this server
    api_url: str
    pids: dict[str, int]  # postgres, server, worker-<n>
    ports: dict[str, int]  # postgres, server
    up_output: str

    @property
    def workers(self) -> list[str]:
        return [name for name in self.pids if name.startswith("worker-")]

    def worker_log(self, name: str) -> str:
        return (self.dir / f"{name}.log").read_text(errors="replace")

    def api(self, method: str, path: str, **kwargs) -> httpx.Response:
        with httpx.Client(timeout=30, trust_env=False) as client:
            return client.request(method, f"{self.api_url}/{path.lstrip('/')}", **kwargs).raise_for_status()

    def down(self) -> subprocess.CompletedProcess:
        return subprocess.run([str(SCRIPT), "down", str(self.dir)], env=self.env, capture_output=True, text=True,
                              timeout=300)


def base_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without its Prefect settings, with this interpreter's bin first on
    PATH (`python` and `prefect` of the project's virtual environment) and `extra` (a worker's
    credentials, e.g. LLM_BASE_URL of the simulator)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "LLM_", "JUDGE_", "EMBEDDING_")) and k != "DO_NOT_TRACK"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **(extra or {})}


@contextmanager
def distributed(workers: int = 2, extra_env: dict[str, str] | None = None) -> Iterator[Cluster]:
    """`up DIR WORKERS` with the caller's environment plus `extra_env` (what the workers inherit),
    the Cluster, then `down` (and DIR removed) whatever happened."""
    folder = Path(tempfile.mkdtemp(prefix="mobilemem-distributed-", dir="/tmp"))
    folder.chmod(0o755)  # the postgres user must reach DIR/postgres
    env = {**base_environment(extra_env), "PREFECT_HOME": str(folder / "prefect-home")}
    try:
        done = subprocess.run([str(SCRIPT), "up", str(folder), str(workers)], env=env, capture_output=True,
                              text=True, timeout=UP_TIMEOUT_S, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise NotUp(done.stderr.strip()[-4000:] or f"exit status {done.returncode}")
        yield _cluster(folder, env, done.stdout)
    finally:
        subprocess.run([str(SCRIPT), "down", str(folder)], env=env, capture_output=True, timeout=300)
        shutil.rmtree(folder, ignore_errors=True)


def _cluster(folder: Path, env: dict[str, str], output: str) -> Cluster:
    sourced = {}
    for line in (folder / "env").read_text().splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        sourced[name] = value
    return Cluster(dir=folder, env={**env, **sourced}, api_url=sourced["PREFECT_API_URL"],
                   pids=_pairs(folder / "pids"), ports=_pairs(folder / "ports"), up_output=output)


def _pairs(path: Path) -> dict[str, int]:
    return {name: int(value) for name, value in (line.split() for line in path.read_text().splitlines())}
