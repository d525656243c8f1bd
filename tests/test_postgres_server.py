"""deployments/postgres.sh: a PostgreSQL cluster of its own, a Prefect server on it (the bench's
server, with the embedded server's settings) and the sample's smallest evaluation through it; the
runs are PostgreSQL's rows, and everything is stopped, even when the test fails. Where PostgreSQL is
missing and cannot be installed (not root, no apt-get) the test is skipped, and fails under CI=true."""

import glob
import os
import shutil
import subprocess
import sys
from urllib.parse import urlsplit

import pytest

from conftest import ROOT
from mobilemem.records import SummaryFile
from mobilemem.rundir import RunDir, read_record

sys.path.insert(0, str(ROOT / "bench"))
from harness import Processes  # noqa: E402
from procstats import alive  # noqa: E402

pytestmark = pytest.mark.slow


def test_an_evaluation_on_a_local_postgresql(sample_root, tmp_path):
    require_postgres()
    processes = Processes(home=tmp_path)
    try:
        url, postmaster = processes.postgres()
        assert sql(url, "SHOW fsync") == ["off"] and sql(url, "SHOW listen_addresses") == ["127.0.0.1"]
        _, api = processes.prefect_server(url)
        stats = processes.runner(["--dataset", str(sample_root), "--output", str(tmp_path / "runs"), "--simulate",
                                  "--users", "0", "--limit-questions", "1"], {"PREFECT_API_URL": api},
                                 tmp_path / "runner.err")
        assert stats.exit_code == 0, (tmp_path / "runner.err").read_text()[-3000:]
        summary = read_record(RunDir.for_output(tmp_path / "runs", "qwen3.8-max").summary, SummaryFile)
        assert summary.scored == summary.expected == 1
        flow_runs = sql(url, "SELECT f.name, r.state_type FROM flow_run r JOIN flow f ON f.id = r.flow_id ORDER BY 1")
        assert flow_runs == ["mobilemem|COMPLETED", "mobilemem-user|COMPLETED"]
        assert int(sql(url, "SELECT count(*) FROM task_run")[0]) > 0
    finally:
        processes.close()
    assert not alive(postmaster) and not processes.databases


def sql(url: str, query: str) -> list[str]:
    parts = urlsplit(url)
    done = subprocess.run(["psql", "-h", parts.hostname, "-p", str(parts.port), "-U", parts.username,
                           "-d", parts.path.lstrip("/"), "-tAc", query], capture_output=True, text=True, check=True)
    return done.stdout.split()


def require_postgres() -> None:
    """The script installs Debian's postgresql package when it is missing; it can where this is root
    with apt-get."""
    installed = glob.glob("/usr/lib/postgresql/*/bin/initdb") or shutil.which("initdb")
    if installed or (os.geteuid() == 0 and shutil.which("apt-get")):
        return
    reason = "PostgreSQL is missing and installing it needs root and apt-get"
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)
