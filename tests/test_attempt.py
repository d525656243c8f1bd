"""lifecycle.attempt: one failure with one precedence (issue 23), its errors.jsonl line written."""

from types import SimpleNamespace

from mobilemem.config import load_config
from mobilemem.disk import DiskGuard
from mobilemem.failure_kinds import FailureKind
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.records import ErrorLine, Failure
from mobilemem.rundir import RunDir, read_lines
from mobilemem.simulator import FaultRule
from lifecycle.attempt import attempt
from model_calls import complete

CONFIG = load_config()


def _user(tmp_path):
    run = RunDir(tmp_path / "run")
    run.root.mkdir()
    return SimpleNamespace(run=run, disk=DiskGuard(run.root, 0))


async def _raises(exc):
    raise exc


async def _returns(response):
    return response


async def test_a_success_is_no_failure_and_writes_no_line(tmp_path):
    user = _user(tmp_path)
    tried = await attempt(user, "answer", lambda: _returns(SimpleNamespace(success=True)), user_id=0)
    assert (tried.error, tried.failure, tried.requests) == (None, None, [])
    assert not user.run.errors.exists()


async def test_an_exception_is_counted_under_its_class_and_its_line_is_written(tmp_path):
    user = _user(tmp_path)
    tried = await attempt(user, "index", lambda: _raises(OSError("disk full (injected)")), user_id=2)
    assert tried.response is None and tried.failure.label == "OSError" and tried.failure.error_id == tried.error.id
    [line] = read_lines(user.run.errors, ErrorLine)
    assert line.id == tried.error.id and line.failure.label == "OSError" and "disk full" in line.failure.message


async def test_what_the_response_says_of_its_failure_comes_first(tmp_path):
    user = _user(tmp_path)
    said = Failure(kind=FailureKind.UNPARSEABLE, message="no label")
    tried = await attempt(user, "judge", lambda: _returns(SimpleNamespace(success=False, failure=said)), user_id=0)
    assert tried.failure.label == "unparseable reply" and tried.failure.message == "no label"
    assert tried.error.failure.label == "unparseable reply"


async def test_a_response_that_says_nothing_is_failed(tmp_path):
    user = _user(tmp_path)
    tried = await attempt(user, "answer", lambda: _returns(SimpleNamespace(success=False, failure=None)), user_id=0)
    assert tried.failure.kind is FailureKind.FAILED


async def test_an_exception_after_a_failed_request_is_counted_under_the_request(sim, tmp_path):
    sim.faults = [FaultRule(role="*", contains="", kind="http_500")]
    user = _user(tmp_path)
    model = build_chat_model(Endpoint.simulated("candidate", CONFIG, sim.base_url), CONFIG.candidate)
    try:
        tried = await attempt(user, "answer", lambda: complete(model, "what colour?"), user_id=0)
    finally:
        await close_chat_model(model)
    assert [r.success for r in tried.requests] == [False] and tried.usage.requests == 1
    assert tried.failure.label == "HTTP 500" and tried.failure.status == 500
    assert tried.error.failure.label == "InternalServerError"  # the line names what was raised
