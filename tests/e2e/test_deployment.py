"""The evaluation as a Prefect deployment: a real local server, a process work pool and worker."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from conftest import ROOT
from mobilemem.records import SummaryFile
from mobilemem.rundir import read_record

pytestmark = pytest.mark.slow
PREFECT = [sys.executable, "-m", "prefect"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(cmd: list[str], env: dict, log: Path, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(cmd, env=env, cwd=cwd, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _wait_healthy(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert server.poll() is None, log.read_text()[-2000:]
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"the Prefect server did not start:\n{log.read_text()[-2000:]}")


def test_deployment_runs_through_a_server_and_a_process_worker(sample_root, tmp_path):
    api = f"http://127.0.0.1:{_free_port()}/api"
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect-home"), "PREFECT_API_URL": api,
           "MOBILEMEM_BENCH_ROOT": str(ROOT), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    server = _start([*PREFECT, "server", "start", "--host", "127.0.0.1", "--port", api.split(":")[2].split("/")[0]],
                    env, tmp_path / "server.log", tmp_path)
    worker = None
    try:
        _wait_healthy(api, server, tmp_path / "server.log")
        cli = {"env": env, "cwd": ROOT, "capture_output": True, "text": True, "timeout": 180}
        created = subprocess.run([*PREFECT, "work-pool", "create", "mobilemem", "--type", "process"], **cli)
        assert created.returncode == 0, created.stdout + created.stderr
        deployed = subprocess.run([*PREFECT, "--no-prompt", "deploy", "--all", "--prefect-file",
                                   "deployments/prefect.yaml"], **cli)
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        worker = _start([*PREFECT, "worker", "start", "--pool", "mobilemem"], env, tmp_path / "worker.log", tmp_path)
        output = tmp_path / "runs"
        run = subprocess.run([*PREFECT, "deployment", "run", "mobilemem/evaluate", "--param", f"dataset={sample_root}",
                              "--param", f"output={output}", "--param", "users=[0]", "--watch"], **cli)
        assert run.returncode == 0, run.stdout + run.stderr + (tmp_path / "worker.log").read_text()[-3000:]
        summary = read_record(output / "mobilemem" / "qwen3.8-max" / "summary.json", SummaryFile)
        assert summary.simulated and summary.users == 1 and summary.scored == 3
    finally:
        if worker is not None:
            _stop(worker)
        _stop(server)
