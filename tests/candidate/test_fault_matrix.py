"""HTTP faults x the three model stages, at the plugin level (through ReMe for ingest and answer):
each is a failed typed response of the right kind after exactly one HTTP attempt; nothing raises."""

import pytest

from mobilemem import usage
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.reme import app as reme_app
from mobilemem.reme.answer import answer_question
from mobilemem.reme.ingest import ingest_session
from mobilemem.simulator import FaultRule
from mobilemem_judge import judge_answer

KINDS = {"http_500": "HTTP 500", "http_429": "HTTP 429", "timeout": "timeout", "reset": "connection error",
         "malformed": "malformed response"}


@pytest.fixture
async def models(sim, config):
    candidate = config.candidate.model_copy(update={"request_timeout_s": 0.5})
    judge = config.judge.model_copy(update={"request_timeout_s": 0.5})
    built = (build_chat_model(Endpoint.simulated("candidate", config, sim.base_url), candidate),
             build_chat_model(Endpoint.simulated("judge", config, sim.base_url), judge))
    yield built, candidate
    for model in built:
        await close_chat_model(model)


async def _stage(stage: str, ingested, models, copied_app, tmp_path, scope):
    (candidate_model, judge_model), preset = models
    user = ingested.dataset.users[0]
    if stage == "ingest":
        app = await reme_app.open_user_app(tmp_path / "fresh", candidate_model, preset)
        try:
            response = await ingest_session(app, user.sessions[0], ingested.dataset.root)
        finally:
            await app.close()
        return response.success, usage.failure_category(scope.requests)
    if stage == "answer":
        app, _ = await copied_app(preset=preset, model=candidate_model)
        response = await answer_question(app, user.questions[0], preset)
        return response.success, response.failure.label
    question = ingested.dataset.judge_questions[user.questions[0].question_id]
    judgment = await judge_answer(question, "The colour is red.", judge_model, "mobilemem-omni-judge")
    return judgment.success, judgment.failure.label


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("stage", ["ingest", "answer", "judge"])
async def test_http_fault_is_a_typed_failure_after_one_attempt(ingested, sim, models, copied_app, tmp_path, stage,
                                                               kind):
    sim.faults = [FaultRule(role=stage, contains="", kind=kind, delay_s=1.5)]
    with usage.scope() as scope:
        success, error_kind = await _stage(stage, ingested, models, copied_app, tmp_path, scope)
    assert (success, error_kind) == (False, KINDS[kind])
    sim.wait_idle()
    assert [r.role for r in sim.requests] == [stage]
    [observed] = scope.requests
    assert not observed.success and observed.total_tokens is None and observed.failure.label == KINDS[kind]
