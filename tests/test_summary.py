"""summary.json's official-accounting figure (every expected question in the denominator, a question
not scored counted as 0) beside the unchanged headline, and its token means (usage policy v3, DESIGN §7.1): this run's cost over every scheduled
user and every expected question, a reused unit a known 0, an unknown count never read as 0.

The requests are real exchanges with the simulator: one whose usage it reports, and a stream made
without `stream_options.include_usage`, whose counters are therefore unknown."""

from datetime import UTC, datetime

import httpx
import openai
import pytest

from mobilemem import transport, usage
from mobilemem.config import load_config
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.records import (AnswerResponse, AnswerResponseFile, ErrorFile, JudgmentFile, MemoryUsageFile,
                               MetricsFile, OfficialScore, Score, ObservedRequest, PlannedQuestion,
                               ReusedItem, ReuseFile, RunFile, SessionFile, Usage)
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


def _plan(run: RunDir, users: list[int], questions: list[str],
          groups: dict[str, tuple[str, str | None]] | None = None) -> None:
    """run.json planning `questions` (English, no difficulty unless `groups` gives their language and
    difficulty)."""
    groups = groups or {}
    run.root.mkdir(parents=True)
    write_record(run.run, RunFile(
        args={"dataset": "d", "output": "o"},
        config=load_config(), package_versions={}, git_commit=None, git_dirty=None, dataset_path="d",
        dataset_revision=None, data_sha256="0", questions_sha256="0", prompt_sha256={}, started_at=NOW,
        simulated=True, state="completed", users=users,
        questions=[PlannedQuestion(user_id=int(q.split("_")[0]), question_id=q, language=groups.get(q, ("en",))[0],
                                   difficulty=groups.get(q, ("en", None))[1], gold="red") for q in questions]))


@pytest.fixture
async def requests(sim):
    known, other = await _known(sim, "a request whose usage is reported"), await _known(sim, "a longer one " * 20)
    assert known.total_tokens != other.total_tokens
    return known, other, await _unknown(sim)


def test_a_unit_with_an_unknown_count_makes_the_mean_unknown_never_counts_it_as_zero(tmp_path, requests):
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
    assert usage_summary.policy_version == 3
    assert (per_question.value, per_user.value) == (None, None)  # the totals are not known
    assert per_question.tokens == known.total_tokens + other.total_tokens  # over the two known questions
    assert per_user.tokens == 2 * known.total_tokens  # user 0 alone: user 1's unknown memory cost is not 0
    assert (per_question.known, per_question.denominator, per_question.reused) == (2, 3, 0)
    assert (per_user.known, per_user.denominator, per_user.reused) == (1, 2, 0)
    assert usage_summary.memory.tokens.value == known.total_tokens  # the counters still say what was reported
    assert (usage_summary.memory.tokens.reported_by, usage_summary.memory.tokens.observed) == (1, 2)


def test_with_every_count_known_the_mean_is_over_the_whole_denominator(tmp_path, requests):
    known, other, _ = requests
    run = RunDir(tmp_path / "run")
    _plan(run, [0, 1], ["0_q_1", "1_q_1"])
    _session(run, 0, [known])
    _answer(run, "0_q_1", [known, other])  # user 1 and question 1_q_1 were never attempted: 0 tokens, known
    usage_summary = summarize_run(run.root)[0].usage
    per_question, per_user = usage_summary.mean_tokens_per_question, usage_summary.mean_tokens_per_user
    assert per_question.value == (known.total_tokens + other.total_tokens) / 2
    assert (per_question.known, per_question.denominator, per_question.attempted) == (2, 2, 1)
    assert per_user.value == (2 * known.total_tokens + other.total_tokens) / 2
    assert (per_user.known, per_user.denominator, per_user.attempted) == (2, 2, 1)


def test_no_known_count_is_a_null_mean(tmp_path, requests):
    _, _, unknown = requests
    run = RunDir(tmp_path / "run")
    _plan(run, [0], ["0_q_1"])
    _answer(run, "0_q_1", [unknown])
    per_question = summarize_run(run.root)[0].usage.mean_tokens_per_question
    assert (per_question.value, per_question.tokens) == (None, None) and per_question.known == 0


ITEM = ReusedItem(run_dir="/runs/earlier", run_id="earlier-run", fingerprint="f" * 64)


def _reused(run: RunDir, user_id: int, sessions: list[list[ObservedRequest]], answers: dict[str, list]) -> None:
    """User `user_id` as `--reuse` leaves it: its sessions and answers copied from an earlier run
    (their requests are the earlier run's), memory_usage.json, and a reuse.json naming them."""
    for n, requests in enumerate(sessions, start=1):
        write_record(run.user(user_id).session(f"{user_id}_{n}"), SessionFile(
            started_at=NOW, finished_at=NOW, user_id=user_id, session_id=f"{user_id}_{n}", success=True,
            usage=usage.summarize(requests), requests=requests))
    write_record(run.user(user_id).memory_usage, MemoryUsageFile(user_id=user_id, sessions=len(sessions),
                                                                 usage=Usage()))
    for question_id, requests in answers.items():
        _answer(run, question_id, requests)
    write_record(run.user(user_id).reuse, ReuseFile(user_id=user_id, memory=ITEM,
                                                    answers={q: ITEM for q in answers}))


def test_a_fully_reused_run_cost_nothing_over_all_its_users_and_questions(tmp_path, requests):
    """The sample reused whole (3 users, 9 questions): 0 tokens over 3 users and over 9 questions,
    both known, not a mean over nothing."""
    known, other, _ = requests
    run = RunDir(tmp_path / "run")
    questions = [f"{u}_q_{n}" for u in range(3) for n in (1, 2, 3)]
    _plan(run, [0, 1, 2], questions)
    for u in range(3):
        _reused(run, u, [[known], [other]], {q: [known, other] for q in questions if q.startswith(f"{u}_")})

    usage_summary = summarize_run(run.root)[0].usage
    per_user, per_question = usage_summary.mean_tokens_per_user, usage_summary.mean_tokens_per_question
    assert (per_user.value, per_user.tokens, per_user.denominator, per_user.known, per_user.reused) == (0.0, 0, 3, 3, 3)
    assert (per_question.value, per_question.tokens, per_question.denominator, per_question.known,
            per_question.reused) == (0.0, 0, 9, 9, 9)
    assert (per_user.attempted, per_user.completed, per_question.attempted, per_question.completed) == (0, 0, 0, 0)
    assert usage_summary.memory.requests == usage_summary.answer.requests == 0
    assert (usage_summary.reused.users, usage_summary.reused.sessions, usage_summary.reused.answers) == (3, 6, 9)
    assert usage_summary.reused.answer.tokens.value == 9 * (known.total_tokens + other.total_tokens)


def test_a_partly_reused_run_counts_its_reused_units_as_zero_in_the_denominator(tmp_path, requests):
    """User 0's memory and one answer copied, its other answer made here; user 1 built here."""
    known, other, _ = requests
    run = RunDir(tmp_path / "run")
    _plan(run, [0, 1], ["0_q_1", "0_q_2", "1_q_1"])
    _reused(run, 0, [[other]], {"0_q_1": [other, other]})
    _answer(run, "0_q_2", [known])  # made in this run
    _session(run, 1, [known, other])
    _answer(run, "1_q_1", [other])

    usage_summary = summarize_run(run.root)[0].usage
    per_user, per_question = usage_summary.mean_tokens_per_user, usage_summary.mean_tokens_per_question
    user_0 = known.total_tokens  # its answer 0_q_2; the copied memory and answer cost this run nothing
    user_1 = known.total_tokens + 2 * other.total_tokens
    assert per_user.value == (user_0 + user_1) / 2 and per_user.tokens == user_0 + user_1
    assert (per_user.denominator, per_user.known, per_user.reused, per_user.attempted) == (2, 2, 1, 1)
    assert per_question.value == (0 + known.total_tokens + other.total_tokens) / 3
    assert (per_question.denominator, per_question.known, per_question.reused, per_question.attempted,
            per_question.completed) == (3, 3, 1, 2, 2)
    assert [(u.user_id, u.answer_tokens, u.reused) for u in usage_summary.users] == [
        (0, known.total_tokens, True), (1, other.total_tokens, False)]


def test_a_damaged_reuse_json_makes_its_users_cost_unknown(tmp_path, requests):
    """What of the user was copied cannot be told: its units are unknown, not this run's cost."""
    known, other, _ = requests
    run = RunDir(tmp_path / "run")
    _plan(run, [0, 1], ["0_q_1", "1_q_1"])
    _reused(run, 0, [[other]], {"0_q_1": [other]})
    run.user(0).reuse.write_text('{"schema_version": 2, "user_id": "zero"}', encoding="utf-8")
    _session(run, 1, [known])
    _answer(run, "1_q_1", [known])

    summary = summarize_run(run.root)[0]
    per_user, per_question = summary.usage.mean_tokens_per_user, summary.usage.mean_tokens_per_question
    assert (per_user.value, per_user.tokens, per_user.known, per_user.denominator) == (None, 2 * known.total_tokens, 1, 2)
    assert (per_question.value, per_question.tokens, per_question.known) == (None, known.total_tokens, 1)
    assert [line.split(":")[0] for line in summary.damaged] == ["users/0/reuse.json"]


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
    per_user = summary.usage.mean_tokens_per_user
    assert (per_user.value, per_user.tokens, per_user.known) == (None, known.total_tokens + other.total_tokens, 1)


def _judged(run: RunDir, question_id: str, correct: bool, f1: float, bleu1: float) -> None:
    """An answered, judged and scored question."""
    user_id = int(question_id.split("_")[0])
    _answer(run, question_id, [])
    q = run.user(user_id).question(question_id)
    write_record(q.judgment, JudgmentFile(started_at=NOW, finished_at=NOW, user_id=user_id, question_id=question_id,
                                          success=True, label="CORRECT" if correct else "WRONG", decided_by="json",
                                          raw_reply="{}", usage=Usage(), requests=[]))
    write_record(q.metrics, MetricsFile(user_id=user_id, question_id=question_id, llm_judge=int(correct), f1=f1,
                                        bleu1=bleu1, reference="red"))


GROUPS = {"0_q_1": ("en", "easy"), "0_q_2": ("en", "hard"), "0_q_3": ("en", "easy"),
          "1_q_1": ("zh", "easy"), "1_q_2": ("zh", "hard"), "1_q_3": ("zh", None)}


def test_the_official_accounting_counts_every_expected_question_and_leaves_the_headline_alone(tmp_path):
    """Six expected questions: three scored (labels 1, 0, 1; F1 1, 0.25, 0.5; BLEU-1 0.5, 0.125, 0.25),
    one damaged (its metrics truncated), one answer gap, one never run."""
    run = RunDir(tmp_path / "run")
    _plan(run, [0, 1], list(GROUPS), GROUPS)
    _judged(run, "0_q_1", True, 1.0, 0.5)
    _judged(run, "0_q_2", False, 0.25, 0.125)
    _judged(run, "0_q_3", True, 1.0, 1.0)
    run.user(0).question("0_q_3").metrics.write_text('{"schema_version": 2, "user_id"', encoding="utf-8")
    _judged(run, "1_q_1", True, 0.5, 0.25)
    write_record(run.user(1).question("1_q_2").error, ErrorFile(user_id=1, question_id="1_q_2", stage="answer",
                                                                 reason="HTTP 500", failure=None))

    summary = summarize_run(run.root)[0]
    assert [r.status for r in summarize_run(run.root)[1]] == ["scored", "scored", "damaged", "scored", "answer",
                                                              "not_run"]
    assert summary.overall == Score(expected=6, scored=3, accuracy=2 / 3, f1=1.75 / 3, bleu1=0.875 / 3)
    assert summary.by_language == {"en": Score(expected=3, scored=2, accuracy=0.5, f1=0.625, bleu1=0.3125),
                                   "zh": Score(expected=3, scored=1, accuracy=1.0, f1=0.5, bleu1=0.25)}
    official = summary.official
    assert official.overall == OfficialScore(expected=6, scored=3, not_scored=3, accuracy=2 / 6, f1=1.75 / 6,
                                             bleu1=0.875 / 6)
    assert official.by_language == {
        "en": OfficialScore(expected=3, scored=2, not_scored=1, accuracy=1 / 3, f1=1.25 / 3, bleu1=0.625 / 3),
        "zh": OfficialScore(expected=3, scored=1, not_scored=2, accuracy=1 / 3, f1=0.5 / 3, bleu1=0.25 / 3)}
    assert official.by_difficulty == {
        "None": OfficialScore(expected=1, scored=0, not_scored=1, accuracy=0.0, f1=0.0, bleu1=0.0),
        "easy": OfficialScore(expected=3, scored=2, not_scored=1, accuracy=2 / 3, f1=1.5 / 3, bleu1=0.75 / 3),
        "hard": OfficialScore(expected=2, scored=1, not_scored=1, accuracy=0.0, f1=0.25 / 2, bleu1=0.125 / 2)}
    assert summary.by_difficulty["None"] == Score(expected=1, scored=0, accuracy=None, f1=None, bleu1=None)


def test_with_every_question_scored_the_official_accounting_is_the_headline(tmp_path):
    run = RunDir(tmp_path / "run")
    _plan(run, [0], ["0_q_1", "0_q_2"])
    _judged(run, "0_q_1", True, 0.75, 0.5)
    _judged(run, "0_q_2", False, 0.25, 0.25)
    summary = summarize_run(run.root)[0]
    assert summary.official.overall == OfficialScore(expected=2, scored=2, not_scored=0, accuracy=0.5, f1=0.5,
                                                     bleu1=0.375)
    assert (summary.overall.accuracy, summary.overall.f1, summary.overall.bleu1) == (0.5, 0.5, 0.375)
