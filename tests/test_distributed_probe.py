"""deployments/distributed_probe.py and distributed.sh's argument checks, without starting servers:
the server settings the README tells a server host to export are the script's own, a worker that
exits before it comes online ends the wait in one line, and `down` on a folder that is not up does
nothing."""

import re
import subprocess
import sys

import pytest

import distributed_probe
from conftest import ROOT

SCRIPT = ROOT / "deployments" / "distributed.sh"


def _server_host_exports() -> dict[str, str]:
    guide = (ROOT / "deployments" / "README.md").read_text()
    block = re.search(r"On the \*\*server host\*\*.*?```sh\n(.*?)```", guide, re.S).group(1)
    exports = {}
    for line in block.splitlines():
        if line.startswith("export "):
            exports.update(pair.split("=", 1) for pair in line.removeprefix("export ").split())
    return exports


def test_the_readme_server_host_exports_the_scripts_server_settings():
    exports = _server_host_exports()
    settings = distributed_probe.server_settings()
    assert {name: exports.get(name) for name in settings} == settings
    assert exports["PREFECT_SERVER_DATABASE_CONNECTION_URL"].startswith("postgresql+asyncpg://")


def test_free_ports_differ():
    ports = distributed_probe.free_ports(3)
    assert len(set(ports)) == 3 and all(port > 0 for port in ports)


def test_a_worker_that_exited_ends_the_wait_in_one_line():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with pytest.raises(RuntimeError, match=rf"^worker worker-1 \(PID {dead.pid}\) exited before it came online$"):
        distributed_probe.wait_for_workers("http://127.0.0.1:9/api", "mobilemem", {dead.pid: "worker-1"}, 30)


def test_bad_arguments_are_one_line_and_down_on_a_folder_not_up_does_nothing(tmp_path):
    bad = subprocess.run([str(SCRIPT), "up", str(tmp_path / "x"), "none"], capture_output=True, text=True)
    assert (bad.returncode, bad.stderr) == (1, "distributed.sh: WORKERS must be a positive number, not 'none'\n")
    for folder in (tmp_path, tmp_path / "missing"):
        down = subprocess.run([str(SCRIPT), "down", str(folder)], capture_output=True, text=True)
        assert (down.returncode, down.stdout, down.stderr) == (0, "", "")
    usage = subprocess.run([str(SCRIPT), "sideways"], capture_output=True, text=True)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: ")
