"""SIGTERM (or SIGINT, once or several times) at any moment of a run ends it with exit 130, whole
files and one line on the console: at start-up, in each stage, while every request hangs, while the
report is written, inside Prefect's artifact code, and inside a finalizer (where Python can only
print "Exception ignored" for whatever the signal handler raises).

Each signal is sent by the process to itself from inside the function named (patched to send it
first, then do its work), so it lands exactly there whatever the machine's load."""

import gc
import os
import signal
import threading
import time

import pytest

import tasks.answer
import tasks.finalize
import tasks.index
import tasks.ingest
import tasks.judge
from e2e.runs import run_cli, validate_run_files
from lifecycle import run_setup
from mobilemem.records import RunFile, SummaryFile
from mobilemem.rundir import read_record
from mobilemem.simulator import FaultRule

pytestmark = pytest.mark.slow

# (where, module, function, whether run.json is still `running` then)
POINTS = [("start-up", run_setup, "open_run", None), ("ingest", tasks.ingest, "_ingest", "interrupted"),
          ("index", tasks.index, "_build", "interrupted"), ("answer", tasks.answer, "_answer", "interrupted"),
          ("judge", tasks.judge, "_judge", "interrupted"),
          ("report", tasks.finalize, "write_report_counted", "completed"),
          ("artifacts", tasks.finalize, "acreate_table_artifact", "completed")]


def _signalling(real, signals, sent):
    """`real`, which first sends `signals` to this process (once, on the first call)."""
    def send():
        if not sent:
            sent.append(time.monotonic())
            for signum in signals:
                os.kill(os.getpid(), signum)

    if getattr(real, "__code__", None) and real.__code__.co_flags & 0x80:  # a coroutine function
        async def call(*args, **kwargs):
            send()
            return await real(*args, **kwargs)
    else:
        def call(*args, **kwargs):
            send()
            return real(*args, **kwargs)
    return call


def _check(code, run, capsys, sent, state, expected=9):
    captured = capsys.readouterr()
    assert code == 130, captured.err
    assert sent and time.monotonic() - sent[0] < 30, "the run did not end within 30 s of the signal"
    assert "Traceback" not in captured.err and "Exception ignored" not in captured.err, captured.err
    assert "interrupted" in captured.err.splitlines()[-1]
    if state is None:  # before run.json: nothing is left behind, the same --output can be used again
        assert not run.root.exists()
        return
    assert read_record(run.run, RunFile).state == state
    assert read_record(run.summary, SummaryFile).expected == expected
    assert validate_run_files(run) > 3


@pytest.mark.parametrize(("where", "module", "function", "state"), POINTS, ids=[p[0] for p in POINTS])
def test_sigterm_anywhere_ends_the_run_with_130_and_whole_files(sim, sample_root, tmp_path, monkeypatch, capsys,
                                                                 where, module, function, state):
    sent: list[float] = []
    monkeypatch.setattr(module, function, _signalling(getattr(module, function), [signal.SIGTERM], sent))
    code, run = run_cli(monkeypatch, sim, sample_root, tmp_path / "out")
    _check(code, run, capsys, sent, state)


def test_repeated_sigint_is_one_interrupt(sim, sample_root, tmp_path, monkeypatch, capsys):
    sent: list[float] = []
    monkeypatch.setattr(tasks.answer, "_answer", _signalling(tasks.answer._answer, [signal.SIGINT] * 3, sent))
    code, run = run_cli(monkeypatch, sim, sample_root, tmp_path / "out")
    _check(code, run, capsys, sent, "interrupted")


def test_a_signal_inside_a_finalizer_still_interrupts(sim, sample_root, tmp_path, monkeypatch, capsys):
    """Prefect's SIGTERM handler raises TerminationSignal wherever the main thread is; inside a
    finalizer Python drops it ("Exception ignored in ..."). The run is still interrupted."""
    sent: list[float] = []

    class Finalized:
        def __del__(self):
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGTERM)
            sum(range(1000))  # bytecode after the kill: the handler runs here, inside the finalizer

    real_answer = tasks.answer._answer

    async def answer(job, user):
        if not sent:
            Finalized()
            gc.collect()
        return await real_answer(job, user)

    monkeypatch.setattr(tasks.answer, "_answer", answer)
    code, run = run_cli(monkeypatch, sim, sample_root, tmp_path / "out")
    _check(code, run, capsys, sent, "interrupted")


def test_sigterm_while_every_request_hangs_ends_the_run(sim, sample_root, tmp_path, monkeypatch, capsys):
    """Every answer request hangs (the endpoint accepts it and never answers); SIGTERM once all of
    user 0's are in flight still ends the run in time."""
    sim.faults = [FaultRule(role="answer", contains="", kind="timeout", delay_s=35)]
    sent: list[float] = []

    def watch() -> None:
        while not sent and sim.max_in_flight("answer") < 3:
            time.sleep(0.05)
        if not sent:
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGTERM)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        code, run = run_cli(monkeypatch, sim, sample_root, tmp_path / "out", "--users", "0")
    finally:
        sent.append(time.monotonic())  # stops the watcher if the run ended first
        watcher.join(5)
    sent.pop()
    _check(code, run, capsys, sent, "interrupted", expected=3)
