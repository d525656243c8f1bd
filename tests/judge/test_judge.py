import json

import pytest

from mobilemem import usage
from mobilemem.config import load_config
from mobilemem.dataset import JudgeQuestion
from mobilemem.errors import ConfigError
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.records import JudgeSettingsFile
from mobilemem.simulator import FaultRule
from mobilemem_judge import fill, judge_answer, judge_settings, rubric_sha256

CONFIG = load_config()
QUESTION = JudgeQuestion(user_id=0, question_id="0_q_1", question="What colour was the photo?",
                         answer=["red", "red XQZMARK-ans-0-1"], evidence=[{"explanation": {"image": "red"}}],
                         question_type="visual_reasoning", question_format="open", difficulty="easy", language="en")


async def _judge(sim, prediction: str):
    model = build_chat_model(Endpoint.simulated("judge", CONFIG, sim.base_url), CONFIG.judge)
    try:
        with usage.scope() as scope:
            judgment = await judge_answer(QUESTION, prediction, model, CONFIG.judge.rubric)
    finally:
        await close_chat_model(model)
    return judgment, scope


async def test_request_is_the_filled_rubric_alone_with_the_judge_preset(sim):
    judgment, scope = await _judge(sim, "The colour is red.")
    [request] = sim.requests
    body = request.body
    assert request.role == "judge"
    assert [m["role"] for m in body["messages"]] == ["user"]
    [part] = body["messages"][0]["content"]
    assert part["text"].encode() == fill("mobilemem-omni-judge", QUESTION, "The colour is red.").encode()
    assert body["enable_thinking"] is False and body["max_completion_tokens"] == 4096
    assert body.get("stream") is False and "stream_options" not in body and "tools" not in body
    assert (judgment.success, judgment.label, judgment.decided_by) == (True, "CORRECT", "json")
    assert scope.usage().total_tokens.value == request.usage["total_tokens"]


async def test_wrong_answer(sim):
    judgment, _ = await _judge(sim, "The colour is blue.")
    assert (judgment.success, judgment.label) == (True, "WRONG")


@pytest.mark.parametrize(("kind", "reason"), [("http_500", "500"), ("timeout", ""), ("empty_reply", "no CORRECT")])
async def test_failures_are_judge_gaps_not_zero(sim, kind, reason):
    sim.faults = [FaultRule(role="judge", contains="", kind=kind, delay_s=2)]
    judge_preset = CONFIG.judge.model_copy(update={"request_timeout_s": 0.5})
    model = build_chat_model(Endpoint.simulated("judge", CONFIG, sim.base_url), judge_preset)
    try:
        judgment = await judge_answer(QUESTION, "red", model, CONFIG.judge.rubric)
    finally:
        await close_chat_model(model)
    assert not judgment.success and judgment.label is None and reason in judgment.failure.message
    assert len(sim.requests) == 1


@pytest.mark.parametrize(("reply", "label", "kind", "decided_by"), [
    ("The generated answer is not correct.", "WRONG", None, "words"),
    ("The correct answer is red, so the generated answer is wrong.", None, "ambiguous judge reply", "words"),
    ('It is not correct at all.\n{"label": "CORRECT"}', "CORRECT", None, "embedded_json"),
    ("I cannot tell.", None, "unparseable reply", None),
])
async def test_a_reply_in_words_is_read_or_is_a_judge_gap_of_its_kind(sim, reply, label, kind, decided_by):
    sim.faults = [FaultRule(role="judge", contains="", kind="text", text=reply)]
    judgment, _ = await _judge(sim, "The colour is red.")
    assert (judgment.success, judgment.label, judgment.failure and judgment.failure.label, judgment.decided_by) == (
        label is not None, label, kind, decided_by)
    assert judgment.raw_reply == reply and len(sim.requests) == 1
    if kind == "ambiguous judge reply":
        assert judgment.failure.message == ("the judge's reply has no JSON label and its words give both "
                                            "verdicts, CORRECT and WRONG")


def test_judge_settings_are_a_credential_free_whitelist():
    env = {"LLM_API_KEY": "sk-cand-PLANTED-111111", "LLM_BASE_URL": "https://cand.invalid/v1",
           "JUDGE_API_KEY": "sk-judge-PLANTED-222222", "JUDGE_BASE_URL": "https://judge.invalid/v1",
           "JUDGE_MODEL_NAME": "judge-override"}
    settings = judge_settings(CONFIG.judge, Endpoint.from_env("judge", CONFIG, env))
    dumped = settings.model_dump_json()
    assert "PLANTED" not in dumped and "invalid" not in dumped
    assert JudgeSettingsFile.model_validate_json(dumped) == settings
    assert (settings.model, settings.model_from_env, settings.rubric) == ("judge-override", True, "mobilemem-omni-judge")
    assert settings.rubric_sha256 == rubric_sha256("mobilemem-omni-judge")
    assert json.loads(dumped)["extra_body"] == {"enable_thinking": False}
    with pytest.raises(ConfigError, match="judge.rubric"):
        judge_settings(CONFIG.judge.model_copy(update={"rubric": "nope"}), Endpoint.simulated("judge", CONFIG, "x"))
