"""deployments/distributed.sh on one machine: PostgreSQL, a Prefect server on it, the `mobilemem`
process pool with two workers of distinct names, online; a run of the `mobilemem/evaluate`
deployment completes on one of them; `down` leaves no process and no listening port behind, and
is a no-op the second time. The tests run in this order: the last one takes the cluster down."""

import json
import socket
import subprocess
import sys

import psutil
import pytest

from conftest import ROOT
from e2e.distributed.cluster import POOL
from mobilemem.records import SummaryFile
from mobilemem.rundir import RunDir, read_record

sys.path.insert(0, str(ROOT / "bench"))
from procstats import alive  # noqa: E402

pytestmark = pytest.mark.slow


def test_both_workers_are_online_in_the_pool(cluster):
    assert cluster.workers == ["worker-1", "worker-2"]
    workers = cluster.api("POST", f"work_pools/{POOL}/workers/filter", json={}).json()
    assert sorted((w["name"], w["status"]) for w in workers) == [("worker-1", "ONLINE"), ("worker-2", "ONLINE")]
    assert all(alive(cluster.pids[name]) for name in cluster.workers)
    pool = cluster.api("GET", f"work_pools/{POOL}").json()
    assert pool["type"] == "process"
    deployments = {d["name"] for d in cluster.api("POST", "deployments/filter", json={}).json()}
    assert deployments == {"evaluate", "evaluate-user"}


def test_the_database_is_postgresql_without_fsync(cluster):
    port = cluster.ports["postgres"]
    done = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d", "prefect", "-tAc",
                           "SELECT current_setting('fsync'), count(*) FROM work_pool"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["off|1"]  # the server's pool is a row of this database


def test_a_run_of_the_evaluate_deployment_completes_on_one_worker(cluster, sample_root, tmp_path):
    output = tmp_path / "runs"
    done = subprocess.run(["prefect", "deployment", "run", "mobilemem/evaluate", "--param", f"dataset={sample_root}",
                           "--param", f"output={output}", "--watch"], env={**cluster.env, "COLUMNS": "400"},
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    logs = {name: cluster.worker_log(name) for name in cluster.workers}
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:] + json.dumps(logs)[-3000:]
    run = RunDir.for_output(output, "qwen3.8-max")
    summary = read_record(run.summary, SummaryFile)
    assert summary.simulated and summary.scored == summary.expected == 9
    flow_run_id = json.loads(run.run.read_text())["flow_run_id"]
    flow_run = cluster.api("GET", f"flow_runs/{flow_run_id}").json()
    assert flow_run["state_type"] == "COMPLETED"
    # both workers may pick the run up (they poll every second); the server lets one of them start it
    picked = {name for name, log in logs.items() if f"Worker '{name}' submitting flow run '{flow_run_id}'" in log}
    aborted = {name for name, log in logs.items() if f"Aborted submission of flow run '{flow_run_id}'" in log}
    assert len(picked - aborted) == 1, logs


def test_down_leaves_no_process_and_no_listening_port(cluster):
    started = []
    for pid in cluster.pids.values():
        process = psutil.Process(pid)
        started += [process.pid, *(child.pid for child in process.children(recursive=True))]
    assert all(alive(pid) for pid in cluster.pids.values())
    assert all(_listening(port) for port in cluster.ports.values())

    done = cluster.down()
    assert done.returncode == 0, done.stderr
    assert [pid for pid in started if alive(pid)] == []
    assert [port for port in cluster.ports.values() if _listening(port)] == []
    assert not (cluster.dir / "pids").exists() and not (cluster.dir / "env").exists()
    again = cluster.down()
    assert (again.returncode, again.stderr) == (0, "")


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0
