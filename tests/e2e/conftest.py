"""End-to-end fixtures: one Prefect test server for the whole session (autouse only here), quiet."""

import os

import pytest
from prefect.testing.utilities import prefect_test_harness

from flows.mobilemem import EMBEDDED_SERVER_QUIET

QUIET = {"PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
         "PREFECT_LOGGING_TO_API_ENABLED": "false", **EMBEDDED_SERVER_QUIET}


@pytest.fixture(scope="session", autouse=True)
def prefect_server():
    saved = {name: os.environ.get(name) for name in QUIET}
    os.environ.update(QUIET)
    with prefect_test_harness(server_startup_timeout=120):
        yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def baseline_run(sample_root, simulator, tmp_path_factory):
    """The fault-free run of the sample every fault scenario is compared with: (exit, RunDir, chat
    requests, every HTTP route hit). ReMe's embedding settings point at the simulator too, so an
    embedding request, if ReMe ever made one, would show up in the routes."""
    from e2e.runs import run_cli

    simulator.reset()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EMBEDDING_BASE_URL", simulator.base_url)
        mp.setenv("EMBEDDING_API_KEY", "sk-embedding-unused")
        code, run = run_cli(mp, simulator, sample_root, tmp_path_factory.mktemp("baseline"))
    requests, routes = simulator.requests, simulator.routes
    simulator.reset()
    return code, run, requests, routes
