"""summary.json's token means never read an unknown count as 0 (usage policy v2, DESIGN §7.1).

The requests are real exchanges with the simulator: one whose usage it reports, and a stream made
without `stream_options.include_usage`, whose counters are therefore unknown."""

from datetime import UTC, datetime

import httpx
import openai
import pytest

from mobilemem import transport, usage
from mobilemem.config import load_config
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.records import (AnswerResponse, AnswerResponseFile, ObservedRequest, PlannedQuestion, RunFile,
                               SessionFile)
from mobilemem.rundir import RunDir, write_record
from mobilemem.summary import summarize_run
from model_calls import complete

NOW = datetime.now(UTC)


async def _known(sim, text: str) -> ObservedRequest:
    config = load_config()
    model = build_chat_model(Endpoint.simulated("candidate", config, sim.base_url), config.candidate)
    try:
        with usage.scope() as scope:
            await complete(model, text)
    finally:
        await close_chat_model(model)
    [request] = scope.requests
    assert request.success and request.total_tokens
    return request


async def _unknown(sim) -> ObservedRequest:
    client = openai.AsyncOpenAI(api_key="k", base_url=sim.base_url, max_retries=0,
                                http_client=httpx.AsyncClient(transport=transport.RecordingTransport()))
    try:
        with usage.scope() as scope:
            async for _ in await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "no usage please"}], stream=True):
                pass
    finally:
        await client.close()
    [request] = scope.requests
    assert request.success and request.total_tokens is None and request.prompt_tokens is None
    return request


def _session(run: RunDir, user_id: int, requests: list[ObservedRequest]) -> None:
    write_record(run.user(user_id).session(f"{user_id}_1"), SessionFile(
        started_at=NOW, finished_at=NOW, user_id=user_id, session_id=f"{user_id}_1", success=True,
        usage=usage.summarize(requests), requests=requests))


def _answer(run: RunDir, question_id: str, requests: list[ObservedRequest]) -> None:
    user_id = int(question_id.split("_")[0])
    write_record(run.user(user_id).question(question_id).answer_response, AnswerResponseFile(
        started_at=NOW, finished_at=NOW, user_id=user_id, question_id=question_id,
        response=AnswerResponse(success=True, answer="red", finished_reason="completed"),
        usage=usage.summarize(requests), requests=requests, latency_s=0.1))


def _plan(run: RunDir, users: list[int], questions: list[str]) -> None:
    run.root.mkdir(parents=True)
    write_record(run.run, RunFile(
        args={"dataset": "d", "output": "o"},
        config=load_config(), package_versions={}, git_commit=None, git_dirty=None, dataset_path="d",
        dataset_revision=None, data_sha256="0", questions_sha256="0", prompt_sha256={}, started_at=NOW,
        simulated=True, state="completed", users=users,
        questions=[PlannedQuestion(user_id=int(q.split("_")[0]), question_id=q, language="en", difficulty=None,
                                   gold="red") for q in questions]))


@pytest.fixture
async def requests(sim):
    known, other = await _known(sim, "a request whose usage is reported"), await _known(sim, "a longer one " * 20)
    assert known.total_tokens != other.total_tokens
    return known, other, await _unknown(sim)


def test_a_unit_with_an_unknown_count_is_left_out_of_the_mean_not_counted_as_zero(tmp_path, requests):
    known, other, unknown = requests
    run = RunDir(tmp_path / "run")
    _plan(run, [0, 1], ["0_q_1", "1_q_1", "1_q_2"])
    _session(run, 0, [known])
    _session(run, 1, [unknown])  # user 1's memory cost is unknown
    _answer(run, "0_q_1", [known])
    _answer(run, "1_q_1", [other])
    _answer(run, "1_q_2", [known, unknown])  # one of this answer's requests reported no usage

    usage_summary = summarize_run(run.root)[0].usage
    per_question, per_user = usage_summary.mean_tokens_per_question, usage_summary.mean_tokens_per_user
    assert per_question.value == (known.total_tokens + other.total_tokens) / 2  # not the sum over all 3
    assert per_user.value == 2 * known.total_tokens  # user 0 alone: user 1's unknown memory cost is not 0
    assert per_question.tokens == known.total_tokens + other.total_tokens and per_user.tokens == 2 * known.total_tokens
    assert (per_question.known, per_question.denominator) == (2, 3)
    assert (per_user.known, per_user.denominator) == (1, 2)
    assert usage_summary.memory.tokens.value == known.total_tokens  # the counters still say what was reported
    assert (usage_summary.memory.tokens.reported_by, usage_summary.memory.tokens.observed) == (1, 2)


def test_with_every_count_known_the_mean_is_over_the_whole_denominator(tmp_path, requests):
    known, other, _ = requests
    run = RunDir(tmp_path / "run")
    _plan(run, [0, 1], ["0_q_1", "1_q_1"])
    _session(run, 0, [known])
    _answer(run, "0_q_1", [known, other])  # user 1 and question 1_q_1 were never attempted: 0 tokens, known
    per_question = summarize_run(run.root)[0].usage.mean_tokens_per_question
    assert per_question.value == (known.total_tokens + other.total_tokens) / 2
    assert (per_question.known, per_question.denominator, per_question.attempted) == (2, 2, 1)


def test_no_known_count_is_a_null_mean(tmp_path, requests):
    _, _, unknown = requests
    run = RunDir(tmp_path / "run")
    _plan(run, [0], ["0_q_1"])
    _answer(run, "0_q_1", [unknown])
    per_question = summarize_run(run.root)[0].usage.mean_tokens_per_question
    assert (per_question.value, per_question.tokens) == (None, None) and per_question.known == 0


def test_each_users_cost_is_summarized_once_for_the_report(tmp_path, requests):
    known, other, unknown = requests
    run = RunDir(tmp_path / "run")
    _plan(run, [0, 1, 2], ["0_q_1", "1_q_1", "2_q_1"])
    _session(run, 0, [known])
    _session(run, 1, [other])
    _session(run, 2, [known])
    _answer(run, "0_q_1", [other])
    _answer(run, "1_q_1", [known, unknown])  # reported no usage: user 1's answer cost is unknown
    _answer(run, "2_q_1", [known])
    run.user(2).session("2_1").write_text('{"truncated', encoding="utf-8")  # user 2's memory cost is unknown

    summary = summarize_run(run.root)[0]
    assert [(u.user_id, u.sessions, u.memory_tokens, u.answer_tokens, u.reused) for u in summary.usage.users] == [
        (0, 1, known.total_tokens, other.total_tokens, False),
        (1, 1, other.total_tokens, None, False),
        (2, 1, None, known.total_tokens, False)]
    assert [line.split(":")[0] for line in summary.damaged] == ["users/2/sessions/2_1.json"]
    assert summary.usage.mean_tokens_per_user.value == known.total_tokens + other.total_tokens  # user 0 alone
