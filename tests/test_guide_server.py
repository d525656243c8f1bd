"""deployments/guide_server.py, the deployment guide's check that its Prefect server is its own: a
taken port gives way to a free one, and an API answering on the port counts only when the guide's
server process itself listens there. Real sockets on 127.0.0.1; the servers are tiny HTTP servers in
child processes, answering /api/health as Prefect's does."""

import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import guide_server
from conftest import ROOT

HEALTH_SERVER = """
import http.server, sys

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"true" if self.path == "/api/health" else b"not found"
        self.send_response(200 if self.path == "/api/health" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def _process(*args: str) -> Iterator[subprocess.Popen]:
    process = subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


@contextmanager
def _health_server(port: int) -> Iterator[subprocess.Popen]:
    with _process("-c", HEALTH_SERVER, str(port)) as server:
        guide_server.own_server_url(server.pid, port, timeout_s=60)  # it listens and answers
        yield server


def _url_command(pid: int, port: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "deployments" / "guide_server.py"), "url", str(pid), str(port)],
                          capture_output=True, text=True, timeout=120)


def test_a_free_preferred_port_is_kept():
    port = _free_port()
    assert guide_server.pick_port(port) == port


def test_a_taken_port_gives_way_to_a_free_one():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        picked = guide_server.pick_port(taken)
        assert picked != taken
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", picked))


def test_the_url_is_printed_once_the_guides_own_process_answers():
    port = _free_port()
    with _process("-c", HEALTH_SERVER, str(port)) as own:
        done = _url_command(own.pid, port)
    assert (done.returncode, done.stdout) == (0, f"http://127.0.0.1:{port}/api\n")
    assert done.stderr == f"the guide's Prefect server answers: dashboard http://127.0.0.1:{port}\n"


def test_a_foreign_answer_is_refused_once_the_guides_server_has_exited():
    port = _free_port()
    with _health_server(port), _process("-c", "raise SystemExit(1)") as own:
        own.wait()  # as Prefect's server exits when its port is taken
        done = _url_command(own.pid, port)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("refused: the guide's Prefect server")
    assert "PREFECT_API_URL is now empty" in done.stderr


def test_a_foreign_answer_never_counts_while_the_guides_server_is_still_starting():
    port = _free_port()
    with _health_server(port), _process("-c", "import sys; sys.stdin.read()") as own:  # alive, not listening
        with pytest.raises(guide_server.NotTheGuidesServer, match="did not answer on port"):
            guide_server.own_server_url(own.pid, port, timeout_s=1)
