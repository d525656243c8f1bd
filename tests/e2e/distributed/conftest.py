"""Distributed-mode fixtures: one deployments/distributed.sh cluster (PostgreSQL, a Prefect server,
the `mobilemem` process pool with two workers) per test module, its workers' model endpoint the
session's simulator. These tests talk to that external server through subprocesses only (see
cluster.py for the environment they need), so the session's in-process test server of
tests/e2e/conftest.py is not started for them."""

import glob
import os
import shutil
from collections.abc import Iterator

import pytest

from e2e.distributed.cluster import Cluster, distributed
from e2e.runs import API_KEY


@pytest.fixture(scope="session", autouse=True)
def prefect_server():
    """Overrides tests/e2e/conftest.py's in-process harness, which these tests never use."""
    yield


@pytest.fixture(scope="module")
def cluster(simulator) -> Iterator[Cluster]:
    """Two workers whose flow runs call the simulator (LLM_BASE_URL, LLM_API_KEY in their own
    environment); `down` at the end of the module, even after a failure."""
    require_postgres()
    with distributed(workers=2, extra_env={"LLM_BASE_URL": simulator.base_url, "LLM_API_KEY": API_KEY}) as running:
        yield running


def require_postgres() -> None:
    """distributed.sh installs Debian's postgresql package when missing: it can as root with apt-get."""
    if glob.glob("/usr/lib/postgresql/*/bin/initdb") or shutil.which("initdb"):
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        return
    reason = "PostgreSQL is missing and installing it needs root and apt-get"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)
