"""End-to-end fixtures: one Prefect test server for the whole session (autouse only here), quiet."""

import os

import pytest

# Logs do go to the API: the progress lines and failed steps' states are read back from it.
QUIET = {"PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL"}


@pytest.fixture(scope="session", autouse=True)
def prefect_server():
    # imported here, not at the top: pytest loads this file before the root conftest's
    # pytest_configure has given Prefect the suite's own PREFECT_HOME
    from prefect.testing.utilities import prefect_test_harness

    from cli.console import EMBEDDED_SERVER_SETTINGS

    quiet = {**QUIET, **EMBEDDED_SERVER_SETTINGS}
    saved = {name: os.environ.get(name) for name in quiet}
    os.environ.update(quiet)
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


@pytest.fixture(scope="session")
def faulty_run(sample_root, simulator, tmp_path_factory):
    """Every stage fails once: user 1's session 1_2 (HTTP 500), user 2's index build (an exception),
    one answer of user 0 (HTTP 401 quoting the API key back) and one judgment of user 0 (no label).
    Cleaning up fails too."""
    from e2e.runs import run_cli
    from mobilemem.dataset import load_dataset
    from mobilemem.reme import app as reme_app
    from mobilemem.simulator import FaultRule

    dataset = load_dataset(sample_root)
    answer_q, judge_q = dataset.users[0].questions[1], dataset.users[0].questions[2]
    simulator.reset()
    simulator.faults = [FaultRule(role="ingest", contains="session_id=1_2 date=", kind="http_500"),
                        FaultRule(role="answer", contains=answer_q.question, kind="http_401_echo"),
                        FaultRule(role="judge", contains=judge_q.question, kind="empty_reply")]
    real_build = reme_app.build_index

    async def failing_build(app):
        if app.config.workspace_dir.endswith("/2/workspace"):
            raise OSError("disk full while writing the index (injected)")
        return await real_build(app)

    config = tmp_path_factory.mktemp("config") / "config.yaml"
    config.write_text("dashboard:\n  task_artifacts: true\n", encoding="utf-8")  # the dashboard shows everything
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MOBILEMEM_INJECT_CLEANUP_ERROR", "1")
        mp.setattr(reme_app, "build_index", failing_build)
        code, run = run_cli(mp, simulator, sample_root, tmp_path_factory.mktemp("out"), "--config", str(config))
    requests = simulator.requests
    simulator.reset()
    return code, run, requests, answer_q, judge_q
