"""`--workers POOL` is refused in one line, before anything is written, unless an external Prefect
server holds the pool and the user deployment on it (DESIGN §12). The session's test server is
the external server here: it has neither."""

import pytest

from e2e.runs import run_cli

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("extra", "server", "expected"), [
    (("--simulate",), True, "--workers cannot use --simulate"),
    ((), False, "--workers needs an external Prefect server on PostgreSQL: set PREFECT_API_URL"),
    ((), True, "has no work pool 'mobilemem' or no deployment mobilemem-user/evaluate-user"),
])
def test_workers_are_refused_without_what_they_need(extra, server, expected, sample_root, tmp_path, monkeypatch,
                                                   simulator, capsys):
    from prefect.settings import PREFECT_API_URL

    if server:
        monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())
    else:
        monkeypatch.delenv("PREFECT_API_URL", raising=False)
    simulator.reset()
    code, run = run_cli(monkeypatch, simulator, sample_root, tmp_path / "out", "--workers", "mobilemem", *extra)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and expected in err[0], err
    assert not (tmp_path / "out").exists() and not simulator.requests
