"""deployments/README.md, pasted verbatim: its bash blocks are read from the file and run in order in
one shell, in a fresh copy of the checkout's data (the guide's default Prefect port 4200, its own
PREFECT_HOME). Between the guide's blocks the test adds, clearly apart: the same run again (refused
in one line), and two evaluations in parallel on the same server (each keeps its own artifacts).
The only edits to the guide's text are its placeholders: the endpoint, the key and the dataset path."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from mobilemem.records import SummaryFile
from mobilemem.rundir import read_record

pytestmark = pytest.mark.slow
GUIDE = ROOT / "deployments" / "README.md"
PLACEHOLDERS = ("sk-your-key", "https://your-endpoint/v1", "/data/MobileMem-Omni")

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
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "LLM_", "JUDGE_", "EMBEDDING_"))}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false", COLUMNS="400",  # no wrapped lines
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    return env


def test_the_deployment_guide_works_verbatim(tmp_path, simulator):
    if not _port_free(4200):
        if os.environ.get("CI") == "true":
            pytest.fail("port 4200, the guide's Prefect port, is in use")
        pytest.skip("port 4200, the guide's Prefect port, is in use on this machine")
    run_block, real_block, stop_block = _bash_blocks(GUIDE.read_text())
    deployment_run = run_block.strip().splitlines()[-1]
    assert deployment_run.startswith("prefect deployment run")
    checkout = _checkout(tmp_path)
    real = real_block
    for placeholder, value in zip(PLACEHOLDERS, ("sk-guide-test-key", simulator.base_url,
                                                 str(checkout / "examples" / "sample"))):
        assert placeholder in real
        real = real.replace(placeholder, value)
    script = "\n".join([
        # not -e: `wait` on a stopped worker returns its signal status; every outcome is asserted below.
        # -m: job control, as in the interactive shell the guide is pasted into; without it bash starts
        # background jobs with SIGINT ignored, and Prefect's worker stops on SIGTERM by sending itself SIGINT.
        "set -m -uo pipefail", run_block,
        "echo '=== again'", f"{deployment_run} || echo \"REFUSED-EXIT=$?\"",
        "echo '=== real'", real,
        "echo '=== parallel'", PARALLEL,
        "echo '=== stop'", stop_block])
    (tmp_path / "guide.sh").write_text(script)
    simulator.reset()
    log = tmp_path / "guide.log"  # a file, not a pipe: a background process must not hold the test up
    with log.open("w") as out:
        process = subprocess.Popen(["bash", str(tmp_path / "guide.sh")], cwd=checkout,
                                   env=_environment(tmp_path / "home"), stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            process.wait(timeout=900)
        finally:
            try:  # the server and worker the guide started in the background, if still there
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    output = log.read_text()
    worker_log = (checkout / "prefect-worker.log").read_text() if (checkout / "prefect-worker.log").exists() else ""
    assert process.returncode == 0, output[-6000:] + worker_log[-3000:]
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
