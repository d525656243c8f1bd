"""A hostile endpoint (tests/hostile_endpoint.py, a real server on 127.0.0.1) at every stage: a body
that is not a complete, valid chat completion is a failed request and a failed step; partial usage
is not; an echoed key never gets past the transport."""

import base64
import shutil
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from hostile_endpoint import Hostility, escapings, leaks, start_hostile
from mobilemem import usage
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.reme import app as reme_app
from mobilemem.reme.answer import answer_question
from mobilemem.reme.ingest import ingest_session
from mobilemem_judge import judge_answer

KEY = "sk-HOSTILE-planted-7f3a9c2e51"
SLASHED_KEY = "sk-RED/TEAM/7f3a9c"  # a provider may write it "sk-RED\\/TEAM\\/7f3a9c" (legal JSON)
INVALID = {"html_200": "malformed response", "text_200": "malformed response",
           "not_a_completion": "malformed response", "no_terminal": "broken stream"}


@pytest.fixture
def hostile():
    with start_hostile() as server:
        yield server


async def _run(stage, ingested, config, copied_app, tmp_path, hostile, key=KEY, **limits):
    """One step of `stage` against the hostile endpoint: (success, what the step returned, its requests)."""
    role = "candidate" if stage != "judge" else "judge"
    preset = (config.candidate if stage != "judge" else config.judge).model_copy(update=limits)
    endpoint = Endpoint(role=role, model="m", base_url=hostile.base_url, api_key=SecretStr(key))
    model = build_chat_model(endpoint, preset)
    user = ingested.dataset.users[0]
    try:
        with usage.scope() as scope:
            if stage == "ingest":
                app = await reme_app.open_user_app(tmp_path / "fresh", model, preset)
                try:
                    result = await ingest_session(app, user.sessions[0], ingested.dataset.root,
                                                  preset.session_timeout_s)
                finally:
                    await app.close()
            elif stage == "answer":
                app, _ = await copied_app(model=model)
                result = await answer_question(app, user.questions[0], preset)
            else:
                question = ingested.dataset.judge_questions[user.questions[0].question_id]
                result = await judge_answer(question, "The colour is red.", model, "mobilemem-omni-judge",
                                            timeout_s=preset.timeout_s, max_reply_bytes=preset.max_reply_bytes)
    finally:
        await close_chat_model(model)
    return result.success, result, scope.requests


@pytest.mark.parametrize(("stage", "kind"), [(stage, kind) for stage in ("ingest", "answer", "judge")
                                             for kind in sorted(INVALID)
                                             if (stage, kind) != ("judge", "no_terminal")])  # the judge does not stream
async def test_an_invalid_or_incomplete_completion_fails_the_step(ingested, config, copied_app, tmp_path, hostile,
                                                                  stage, kind):
    hostile.rules = [Hostility(role=stage, kind=kind)]
    success, result, requests = await _run(stage, ingested, config, copied_app, tmp_path, hostile)
    assert not success
    assert [r.success for r in requests] == [False] and requests[0].failure.label == INVALID[kind]
    assert usage.failure_category(requests) == INVALID[kind]
    if stage == "answer":
        assert result.answer is None and result.failure.label == INVALID[kind]
    if stage == "judge":
        assert result.label is None and result.failure.label == INVALID[kind]
    if stage == "ingest":
        assert result.note_path is None


@pytest.mark.parametrize("stage", ["ingest", "answer", "judge"])
async def test_partial_usage_is_unknown_counters_not_a_failure(ingested, config, copied_app, tmp_path, hostile, stage):
    hostile.rules = [Hostility(role="*", kind="partial_usage")]
    success, _, requests = await _run(stage, ingested, config, copied_app, tmp_path, hostile)
    assert success and requests and all(r.success for r in requests)
    assert all(r.prompt_tokens and r.completion_tokens is None and r.total_tokens is None for r in requests)
    summary = usage.summarize(requests)
    assert summary.completion_tokens.value is None and summary.prompt_tokens.reported_by == len(requests)


@pytest.mark.parametrize("stage", ["ingest", "answer", "judge"])
async def test_an_echoed_key_never_gets_past_the_transport(ingested, config, copied_app, tmp_path, hostile, stage):
    hostile.rules = [Hostility(role="*", kind="echo_key")]
    success, result, _ = await _run(stage, ingested, config, copied_app, tmp_path, hostile)
    assert success
    forms = [KEY, base64.b64encode(KEY.encode()).decode(), quote(KEY, safe="")]
    written = "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
    texts = [result.model_dump_json(), written]
    assert [f for f in forms for text in texts if f in text] == []
    if stage in ("answer", "judge"):
        assert "[redacted]" in result.model_dump_json()
    if stage == "ingest":
        assert "My key is [redacted]" in (tmp_path / "fresh" / result.note_path).read_text()


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("stage", ["ingest", "answer", "judge"])
@settings(max_examples=5, deadline=None,  # the rules are set anew for each example, the paths are its own
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), nested=st.booleans())
async def test_an_echoed_key_escaped_in_any_legal_json_never_gets_past_the_transport(
        ingested, config, tmp_path, hostile, stage, stream, data, nested):
    hostile.rules = [Hostility(role="*", kind="echo_key", escapes=data.draw(escapings(SLASHED_KEY)), nested=nested)]
    work, opened = Path(tempfile.mkdtemp(dir=tmp_path)), []

    async def copied_app(model):
        workspace = Path(shutil.copytree(ingested.workspaces[0], work / "0" / "workspace"))
        opened.append(await reme_app.open_user_app(workspace, model, config.candidate))
        return opened[-1], workspace

    try:
        success, result, _ = await _run(stage, ingested, config, copied_app, work, hostile, key=SLASHED_KEY,
                                        stream=stream)
    finally:
        for app in opened:
            await app.close()
    texts = [result.model_dump_json(), *(p.read_text(errors="replace") for p in work.rglob("*") if p.is_file())]
    assert success and leaks(SLASHED_KEY, texts) == []
    assert "[redacted]" in "".join(texts)  # the key was echoed, and removed


@pytest.mark.parametrize(("stage", "limit", "kind"), [("ingest", "session_timeout_s", "timeout"),
                                                      ("answer", "answer_timeout_s", "answer budget exceeded"),
                                                      ("judge", "timeout_s", "timeout")])
async def test_a_trickling_endpoint_is_stopped_by_the_wall_clock_budget(ingested, config, copied_app, tmp_path,
                                                                        hostile, stage, limit, kind):
    hostile.rules = [Hostility(role=stage, kind="trickle", interval_s=0.2)]  # never a 600 s read timeout
    started = time.monotonic()
    success, result, requests = await _run(stage, ingested, config, copied_app, tmp_path, hostile, **{limit: 1.5})
    assert not success and result.failure.label == kind and "1.5 s budget" in (result.failure.message or result.answer)
    assert time.monotonic() - started < 30 and len(requests) == 1 and not requests[0].success
    assert requests[0].failure.label == "cancelled" and requests[0].failure.frames  # cut off by the budget, where it was made


async def test_an_answer_over_the_cap_is_kept_cut_and_marked_truncated(ingested, config, copied_app, tmp_path,
                                                                       hostile):
    hostile.rules = [Hostility(role="answer", kind="huge_answer", size=300_000)]
    success, result, _ = await _run("answer", ingested, config, copied_app, tmp_path, hostile)
    assert success and result.truncated and result.answer_bytes > 300_000
    assert len(result.answer.encode()) <= config.candidate.max_answer_bytes
    assert result.answer.startswith("The colour is red.")


async def test_a_judge_reply_over_the_cap_is_a_judge_gap(ingested, config, copied_app, tmp_path, hostile):
    hostile.rules = [Hostility(role="judge", kind="huge_answer", size=100_000)]
    success, result, _ = await _run("judge", ingested, config, copied_app, tmp_path, hostile)
    assert not success and result.label is None and result.failure.label == "reply too large"
