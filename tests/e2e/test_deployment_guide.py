"""deployments/README.md, pasted verbatim: its bash blocks are read from the file and run in order in
one non-interactive `bash` without job control (as a script, CI or nohup runs them), in a fresh copy
of the checkout's data, with its own PREFECT_HOME, while another real Prefect server (a foreign one,
its own home) holds the guide's default port 4200. Between the guide's blocks the test adds, clearly
apart: the same run again (refused in one line), the worker's stop timed, two evaluations in parallel
on the same server (each keeps its own artifacts) and what the guide's server holds. The only edits
to the guide's text are its placeholders: the endpoint, the key and the dataset path.

Afterwards: the pool, the deployment and every run are on the guide's server and none on the foreign
one, analytics were off, the worker stopped within seconds, and no process the guide started is left."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

import guide_server
from conftest import ROOT
from e2e.runs import stop_process
from mobilemem.records import SummaryFile
from mobilemem.rundir import read_record


pytestmark = pytest.mark.slow
GUIDE = ROOT / "deployments" / "README.md"
PLACEHOLDERS = ("sk-your-key", "https://your-endpoint/v1", "/data/MobileMem-Omni")
DEFAULT_PORT = 4200
MARKER = "MOBILEMEM_GUIDE_TEST"  # in the guide's environment only: every process it started inherits it
STOP_LINE = "kill $WORKER; wait $WORKER"

PARALLEL = """
prefect deployment run 'mobilemem/evaluate' --param output=runs-a --param 'users=[0]' --watch > parallel-a.log 2>&1 &
A=$!
prefect deployment run 'mobilemem/evaluate' --param output=runs-b --param 'users=[1]' --watch > parallel-b.log 2>&1 &
B=$!
wait $A $B
python - > artifacts.json <<'EOF'
import asyncio, json
from prefect.client.orchestration import get_client

async def main():
    async with get_client() as client:
        artifacts = await client.read_artifacts()
    print(json.dumps([{"key": a.key, "description": a.description, "flow_run_id": str(a.flow_run_id)}
                      for a in artifacts if a.key]))

asyncio.run(main())
EOF
"""

# What a server at $PREFECT_API_URL holds, as JSON: run by the guide's shell for its own server, and
# by the test for the foreign one.
CONTENTS = """
import json, os, httpx
api = os.environ["PREFECT_API_URL"]
def names(kind):
    return [item["name"] for item in httpx.post(f"{api}/{kind}/filter", json={}).raise_for_status().json()]
settings = httpx.get(f"{api}/admin/settings").raise_for_status().json()
print(json.dumps({"work_pools": names("work_pools"), "deployments": names("deployments"),
                  "flow_runs": names("flow_runs"), "analytics": settings["server"]["analytics_enabled"]}))
"""


def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, re.S)


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _checkout(tmp_path: Path) -> Path:
    """What a fresh clone holds after the README's first command: the data, the config, the images."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in ("deployments", "config.yaml"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, checkout / name)
    shutil.copytree(ROOT / "examples" / "sample", checkout / "examples" / "sample",
                    ignore=shutil.ignore_patterns("image"))
    subprocess.run([sys.executable, "-m", "zipfile", "-e", "examples/sample/image.zip", "examples/sample/image"],
                   cwd=checkout, check=True)
    return checkout


def _environment(home: Path) -> dict[str, str]:
    """No Prefect setting, no analytics opt-out of the caller's: what the guide sets is what counts."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "LLM_", "JUDGE_", "EMBEDDING_")) and k != "DO_NOT_TRACK"}
    env.update(PREFECT_HOME=str(home), COLUMNS="400",  # no wrapped lines
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    return env


@contextmanager
def _foreign_server(folder: Path) -> Iterator[str]:
    """Another user's Prefect server on the guide's default port: its own home, never the guide's."""
    folder.mkdir()
    env = {**_environment(folder / "home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
    with (folder / "server.log").open("w") as log:
        server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                                   "--port", str(DEFAULT_PORT)], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        try:
            yield guide_server.own_server_url(server.pid, DEFAULT_PORT)
        except guide_server.NotTheGuidesServer as failed:
            pytest.fail(f"the foreign server did not start: {failed}: {(folder / 'server.log').read_text()[-2000:]}")
        assert server.poll() is None, "the foreign server stopped while the guide ran"
    finally:
        stop_process(server, grace_s=60)


def _contents(api_url: str, env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-c", CONTENTS], env={**env, "PREFECT_API_URL": api_url},
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def _script(checkout: Path, simulator) -> str:
    run_block, real_block, stop_block = _bash_blocks(GUIDE.read_text())
    deployment_run = run_block.strip().splitlines()[-1]
    assert deployment_run.startswith("prefect deployment run")
    real = real_block
    for placeholder, value in zip(PLACEHOLDERS, ("sk-guide-test-key", simulator.base_url,
                                                 str(checkout / "examples" / "sample"))):
        assert placeholder in real
        real = real.replace(placeholder, value)
    stop_line, real = real.split("\n", 1)
    assert stop_line == STOP_LINE
    return "\n".join([
        # not -e: `wait` returns a stopped process's status; every outcome is asserted below.
        # +m: no job control, so background commands start with SIGINT ignored, as in any script.
        "set +m -uo pipefail", run_block,
        'echo "GUIDE-API=$PREFECT_API_URL DO_NOT_TRACK=${DO_NOT_TRACK:-}"',
        "echo '=== again'", f"{deployment_run} || echo \"REFUSED-EXIT=$?\"",
        "echo '=== real'", 'echo "STOP-BEGIN=$EPOCHREALTIME"', stop_line,
        'echo "STOP-END=$EPOCHREALTIME STOP-STATUS=$?"', real,
        "echo '=== parallel'", PARALLEL,
        f"python - > guide-server.json <<'EOF'\n{CONTENTS}EOF",
        "echo '=== stop'", stop_block, 'echo "STOPPED-STATUS=$?"'])


def _run_guide(script: Path, checkout: Path, env: dict[str, str], log: Path) -> tuple[int, list[str]]:
    """The guide's exit status and the command lines of what it left running (then ended)."""
    with log.open("w") as out:  # a file, not a pipe: a background process must not hold the test up
        process = subprocess.Popen(["bash", str(script)], cwd=checkout, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            process.wait(timeout=900)
        except subprocess.TimeoutExpired:
            pass  # a hang (a worker that never stops): reported by the caller with the log
        left = _started_by(env[MARKER])
        for running in left:
            running.kill()
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
    return process.returncode, [" ".join(p.info["cmdline"] or [])[:120] for p in left]


def _started_by(marker: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if process.environ().get(MARKER) == marker and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def test_the_deployment_guide_works_verbatim_in_a_script_beside_a_foreign_server(tmp_path, simulator):
    if not _port_free(DEFAULT_PORT):
        if os.environ.get("CI") == "true":
            pytest.fail(f"port {DEFAULT_PORT}, the guide's default Prefect port, is in use")
        pytest.skip(f"port {DEFAULT_PORT}, the guide's default Prefect port, is in use on this machine")
    checkout = _checkout(tmp_path)
    (tmp_path / "guide.sh").write_text(_script(checkout, simulator))
    env = {**_environment(tmp_path / "home"), MARKER: str(tmp_path)}
    simulator.reset()
    with _foreign_server(tmp_path / "foreign") as foreign_api:
        code, left = _run_guide(tmp_path / "guide.sh", checkout, env, tmp_path / "guide.log")
        foreign = _contents(foreign_api, _environment(tmp_path / "home"))
    output = (tmp_path / "guide.log").read_text()
    worker_log = (checkout / "prefect-worker.log").read_text() if (checkout / "prefect-worker.log").exists() else ""
    assert code == 0, output[-6000:] + worker_log[-3000:]
    assert left == []  # the server, the workers and the flow-run processes all exited
    _assert_own_server(output, checkout, foreign)
    _assert_runs(output, checkout, simulator)


def _assert_own_server(output: str, checkout: Path, foreign: dict) -> None:
    picked = re.search(rf"port {DEFAULT_PORT} is taken: the guide's Prefect server uses port (\d+)", output)
    assert picked, output[:3000]
    port = int(picked.group(1))
    assert f"GUIDE-API=http://127.0.0.1:{port}/api DO_NOT_TRACK=1" in output
    assert f"the guide's Prefect server answers: dashboard http://127.0.0.1:{port}" in output
    own = json.loads((checkout / "guide-server.json").read_text())
    assert own["work_pools"] == ["mobilemem"] and sorted(own["deployments"]) == ["evaluate", "evaluate-user"]
    assert len([name for name in own["flow_runs"] if not name.startswith("user-")]) == 5  # every run
    assert own["analytics"] is False
    assert foreign == {"work_pools": [], "deployments": [], "flow_runs": [], "analytics": False}
    begin = float(re.search(r"STOP-BEGIN=([\d.]+)", output).group(1))
    end, status = re.search(r"STOP-END=([\d.]+) STOP-STATUS=(\d+)", output).groups()
    assert status == "0" and float(end) - begin < 60  # it stopped by itself (minutes when SIGINT is ignored)
    assert re.search(r"STOPPED-STATUS=(0|143)\n", output)  # the server's own exit, or SIGTERM's (uvicorn)


def _assert_runs(output: str, checkout: Path, simulator) -> None:
    first, rest = output.split("=== again", 1)
    again, rest = rest.split("=== real", 1)

    summary = read_record(checkout / "runs-deployment" / "mobilemem" / "qwen3.8-max" / "summary.json", SummaryFile)
    assert summary.simulated and summary.scored == summary.expected == 9
    assert "finished successfully" in first and "user 0: sessions" in first  # the progress lines, watched

    assert "REFUSED-EXIT=1" in again and "Traceback" not in again
    assert re.search(r"refused to start: runs-deployment/mobilemem/qwen3\.8-max already exists", again)

    real_summary = read_record(checkout / "runs-real" / "mobilemem" / "qwen3.8-max" / "summary.json", SummaryFile)
    assert not real_summary.simulated and real_summary.scored == 9
    assert any(r.role == "answer" for r in simulator.requests)  # the worker's LLM_* variables were used

    artifacts = json.loads((checkout / "artifacts.json").read_text())
    runs = {}
    for output_dir in ("runs-a", "runs-b"):
        manifest = json.loads((checkout / output_dir / "mobilemem" / "qwen3.8-max" / "run.json").read_text())
        runs[output_dir] = manifest["flow_run_id"]
    for output_dir, run_id in runs.items():
        own = [a for a in artifacts if run_id[:8] in a["key"]]
        assert {a["key"].rsplit(f"{run_id[:8]}-", 1)[1] for a in own} >= {"users", "scores", "run"}
        assert all(run_id in a["description"] for a in own)
    assert len({a["key"] for a in artifacts}) == len(artifacts)  # nobody's latest version was overwritten
