"""The embedded Prefect server a run starts (no PREFECT_API_URL) runs with cli.console's settings
(issue 24), read back through that server's own settings API; a user's own PREFECT_* variable wins."""

import json
import os
import subprocess
import sys

import prefect.settings
import pytest

from cli.console import EMBEDDED_SERVER_SETTINGS
from conftest import ROOT

pytestmark = pytest.mark.slow

# In a process of its own: configure() sets the server's environment, the server is started the
# way a run starts it, and its /admin/settings is printed.
SCRIPT = """
import json, sys
import httpx
from cli import console
from prefect.server.api.server import SubprocessASGIServer
console.configure()
with console.prefect_settings():
    console.start_embedded_server(sys.argv[1])
    server = SubprocessASGIServer()
    try:
        print(json.dumps(httpx.get(f"{server.api_url}/admin/settings", timeout=30).json()))
    finally:
        server.stop()
"""


def _read(settings: dict, variable: str):
    """A setting's value in /admin/settings' nested JSON, by its variable name (Prefect's own accessor)."""
    value = settings
    for part in getattr(prefect.settings, variable).accessor.split("."):
        value = value[part]
    return value


def test_the_embedded_server_runs_with_the_tuned_settings(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= {"HOME": str(tmp_path), "PREFECT_HOME": str(tmp_path / "prefect"),
            "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_BATCH_SIZE": "7"}  # the user's own value
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "server.log")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    settings = json.loads(done.stdout.strip().splitlines()[-1])
    expected = {name: str(value).lower() for name, value in EMBEDDED_SERVER_SETTINGS.items()}
    expected["PREFECT_SERVER_SERVICES_EVENT_PERSISTER_BATCH_SIZE"] = "7"
    assert {name: str(_read(settings, name)).lower() for name in EMBEDDED_SERVER_SETTINGS} == expected
