"""The suite never writes the user's Prefect home: its e2e tests, run in a child pytest whose HOME is
an empty folder and whose environment has no PREFECT_HOME, leave no `~/.prefect` behind."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow


def test_an_e2e_run_of_the_suite_leaves_the_users_prefect_home_alone(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["HOME"] = str(home)
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "child"),
         "tests/e2e/test_flow_sample.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert child.returncode == 0, child.stdout[-3000:] + child.stderr[-3000:]
    assert "passed" in child.stdout
    assert not (home / ".prefect").exists()
    assert (tmp_path / "child" / "prefect-home").is_dir()  # where the child's Prefect lived instead
