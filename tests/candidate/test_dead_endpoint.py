"""An endpoint that dies (SIGKILL) or freezes (SIGSTOP) in the middle of a streamed reply, as a real
process (tests/dying_endpoint.py): the request in flight is a failed request of its true category
within its read timeout (or, when the whole reply had arrived, a success), the next request fails as
fast or as bounded, and the waiting process does not spin. The client runs in a process of its own:
a loop that never awaits would stop its event loop and every timeout in it, so only a bound from
outside turns a hang into a failure."""

import json
import os
import signal
import subprocess
import sys

import psutil
import pytest

from conftest import ROOT

SCRIPT = ROOT / "tests" / "dying_endpoint.py"
READ_TIMEOUT_S = 1.5
GUARD_S = 60  # only against a hang: a spinning client never ends by itself

# (signal, when, failure category of the first request and of the next one); None: it succeeded
CASES = [("KILL", "first_event", "connection error", "connection error"),
         ("KILL", "end", None, "connection error"),  # the SDK drains what follows [DONE] from a dead peer
         ("STOP", "first_event", "timeout", "timeout"),
         ("STOP", "end", None, "timeout")]


@pytest.fixture
def endpoint(request):
    signame, at = request.param
    server = subprocess.Popen([sys.executable, str(SCRIPT), "serve", "--signal", signame, "--at", at],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        yield server, server.stdout.readline().split()[-1]
    finally:
        if server.poll() is None:
            os.kill(server.pid, signal.SIGCONT)
            server.kill()
        server.wait(timeout=GUARD_S)


def _state(pid: int) -> str:
    """The process state letter of /proc/<pid>/stat ('T' = stopped)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize(("endpoint", "first", "second"), [((s, at), first, second) for s, at, first, second in CASES],
                         indirect=["endpoint"], ids=[f"{s}-{at}" for s, at, *_ in CASES])
def test_a_dead_or_frozen_endpoint_fails_each_request_in_bounded_time_without_spinning(endpoint, first, second):
    server, base_url = endpoint
    client = subprocess.Popen([sys.executable, str(SCRIPT), "ask", base_url, "--requests", "2", "--timeout",
                               str(READ_TIMEOUT_S)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = client.communicate(timeout=GUARD_S)
    except subprocess.TimeoutExpired:
        cpu = sum(psutil.Process(client.pid).cpu_times()[:2])
        client.kill()
        client.communicate()
        pytest.fail(f"the client did not come back within {GUARD_S} s, having used {cpu:.0f} s of CPU")
    assert client.returncode == 0, stderr[-2000:]
    outcomes = [json.loads(line) for line in stdout.splitlines()]
    assert [o["failure"] for o in outcomes] == [first, second]
    assert [o["requests"] for o in outcomes] == [1, 1]  # one attempt each, no retry
    if second == "connection error":  # the endpoint really died, or really froze
        assert server.wait(timeout=GUARD_S) == -signal.SIGKILL
    else:
        assert _state(server.pid) == "T"
    for outcome in outcomes:
        assert outcome["wall_s"] < READ_TIMEOUT_S + 5
        if outcome["failure"] == "timeout":  # a real wait: spent sleeping, not polling
            assert outcome["wall_s"] >= READ_TIMEOUT_S and outcome["cpu_s"] < 0.25 * outcome["wall_s"]
        else:
            assert outcome["wall_s"] < 5
