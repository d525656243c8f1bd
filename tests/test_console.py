"""A termination signal that Prefect raises inside an asyncio callback (where asyncio swallows it)
still stops the flow: `signals_reach_the_flow` turns it into the flow task's cancellation."""

import asyncio
import signal

import pytest
from prefect.exceptions import TerminationSignal

from lifecycle.termination import signals_reach_the_flow


def _raise_signal() -> None:
    raise TerminationSignal(signal=signal.SIGTERM)


async def _flow(seconds: float) -> str:
    with signals_reach_the_flow():
        asyncio.get_running_loop().call_soon(_raise_signal)  # a callback, as a socket transport's read is
        await asyncio.sleep(seconds)
        return "finished"


def test_a_signal_swallowed_by_a_callback_cancels_the_flow():
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(_flow(5))


def test_other_callback_errors_still_go_to_the_previous_handler():
    seen = []

    async def flow() -> str:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: seen.append(context["exception"]))
        with signals_reach_the_flow():
            asyncio.get_running_loop().call_soon(lambda: 1 / 0)
            await asyncio.sleep(0.05)
            return "finished"

    assert asyncio.run(flow()) == "finished"
    assert [type(e) for e in seen] == [ZeroDivisionError]


def test_libraries_console_lines_go_to_run_log_only(tmp_path):
    """AgentScope's logger and bm25s's print to the console themselves; under the runner's console
    their lines reach run.log and nothing else (a child process: their handlers are set at import)."""
    import subprocess
    import sys

    script = (
        "import logging, agentscope, bm25s\n"
        "from lifecycle import run_log\n"
        "from cli import console\n"
        "from mobilemem.rundir import RunDir\n"
        "console.configure()\n"
        f"handler = run_log.attach(RunDir(__import__('pathlib').Path({str(tmp_path)!r})))\n"
        "logging.getLogger('as').warning('agentscope warns sk-abcdefgh12345678')\n"
        "logging.getLogger('bm25s').debug('Building index from tokens')\n"
        "run_log.detach(handler)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and result.stdout == ""
    text = (tmp_path / "run.log").read_text()
    assert "agentscope warns [redacted]" in text and "Building index from tokens" in text
