"""What the task adapters write for a failed step, called engine-free (`task.fn`) against the
simulator: the errors.jsonl line of a failed model request keeps where the runner made it (even
when ReMe turned the failure into a failed job), and an answer cut short by its wall-clock budget
keeps the request it cancelled in `answer-response.json`."""

import mobilemem_judge
import pytest

from mobilemem.disk import DiskGuard
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.records import AnswerResponseFile, ErrorLine, JudgmentFile, ObservedRequest, SessionFile
from mobilemem.reme import app as reme_app
from mobilemem.reme.candidate import ReMeImage
from mobilemem.rundir import RunDir, read_lines, read_record
from mobilemem.simulator import FaultRule
from tasks.answer import answer_question
from lifecycle.context import UserContext
from lifecycle.dashboard import Dashboard, RunIdentity, UserProgress
from tasks.ingest import ingest_session
from tasks.judge import judge_answer

DOMAIN = {"ingest": "plugins/mobilemem/src/mobilemem/reme/ingest.py",
          "answer": "plugins/mobilemem/src/mobilemem/reme/answer.py",
          "judge": "plugins/mobilemem-judge/src/mobilemem_judge/judge.py"}
FAILURES = {"http_500": "HTTP 500", "timeout": "timeout", "reset": "connection error",
            "malformed": "malformed response"}


@pytest.fixture
async def user_for(ingested, sim, config, copied_app, tmp_path):
    """A UserContext of user 0 (run directory under tmp_path) whose models talk to the simulator."""
    built, opened = [], []

    async def make(stage: str, **limits) -> UserContext:
        candidate = config.candidate.model_copy(update={"request_timeout_s": 0.5, **limits})
        judge = config.judge.model_copy(update={"request_timeout_s": 0.5})
        models = (build_chat_model(Endpoint.simulated("candidate", config, sim.base_url), candidate),
                  build_chat_model(Endpoint.simulated("judge", config, sim.base_url), judge))
        built.extend(models)
        if stage == "ingest":  # a fresh memory
            app = await reme_app.open_user_app(tmp_path / "fresh" / "workspace", models[0], candidate)
            opened.append(app)
        else:
            app, _ = await copied_app(preset=candidate, model=models[0])
        run = RunDir(tmp_path / "run")
        run.root.mkdir(exist_ok=True)
        user = ingested.dataset.users[0]
        progress = UserProgress(0, len(user.sessions), len(user.questions))
        reme_image = ReMeImage(app, candidate, ingested.dataset.root)
        return UserContext(run=run, user_id=0, candidate=reme_image, dataset_root=ingested.dataset.root,
                           config=config.model_copy(update={"candidate": candidate, "judge": judge}),
                           candidate_model=models[0], judge_model=models[1], progress=progress,
                           dashboard=Dashboard(RunIdentity("test", "no-flow-run"), {0: progress}),
                           disk=DiskGuard(run.root, 0),
                           judge_settings=mobilemem_judge.judge_settings(
                               judge, Endpoint.simulated("judge", config, sim.base_url)),
                           memory_fingerprint="0" * 64)

    yield make
    for app in opened:
        await app.close()
    for model in built:
        await close_chat_model(model)


async def _failed_step(stage: str, ingested, user: UserContext) -> list[ObservedRequest]:
    """Run the stage's task on user 0's first session / question; the requests its record kept."""
    first = ingested.dataset.users[0]
    paths = user.run.user(0)
    if stage == "ingest":
        state = await ingest_session.fn(first.sessions[0], user)
        requests = read_record(paths.session(first.sessions[0].session_id), SessionFile).requests
    elif stage == "answer":
        state = await answer_question.fn(first.questions[0], user)
        requests = read_record(paths.question(first.questions[0].question_id).answer_response,
                               AnswerResponseFile).requests
    else:
        question = ingested.dataset.judge_questions[first.questions[0].question_id]
        state = await judge_answer.fn(question, "The colour is red.", user)
        requests = read_record(paths.question(question.question_id).judgment, JudgmentFile).requests
    assert state.is_failed() and not state.data.success  # the task run's final state, its StepOutcome as data
    return requests


@pytest.mark.parametrize("fault", sorted(FAILURES))
@pytest.mark.parametrize("stage", ["ingest", "answer", "judge"])
async def test_the_error_line_of_a_failed_request_has_the_runner_frames_that_made_it(ingested, sim, user_for,
                                                                                    stage, fault):
    sim.faults = [FaultRule(role=stage, contains="", kind=fault, delay_s=1.5)]
    user = await user_for(stage)
    requests = await _failed_step(stage, ingested, user)
    [line] = read_lines(user.run.errors, ErrorLine)
    [failed] = [r for r in requests if not r.success]
    assert failed.failure.label == FAILURES[fault]
    files = [frame.file for frame in line.failure.frames]
    assert f"tasks/{stage}.py" in files and DOMAIN[stage] in files
    assert files.index(f"tasks/{stage}.py") < files.index(DOMAIN[stage])  # outermost first
    assert all(not f.startswith("/") and "site-packages" not in f for f in files)  # runner code only
    assert line.failure.frames == failed.failure.frames  # the frames of the failing request, also in the step's record


async def test_a_request_cancelled_by_the_answer_budget_is_kept_as_a_failed_request(ingested, sim, user_for):
    # the second model turn (it carries the search hits, `[score=...]`) never gets its reply: the
    # budget ends while it waits, however long the first turn took on a loaded machine
    sim.faults = [FaultRule(role="answer", contains="score=", kind="timeout", delay_s=10)]
    user = await user_for("answer", answer_timeout_s=8, request_timeout_s=30)
    requests = await _failed_step("answer", ingested, user)
    sim.wait_idle()
    assert len(requests) == len(sim.requests) >= 2  # every request the endpoint saw is accounted for
    *answered, cancelled = requests
    assert all(r.success for r in answered)
    assert (cancelled.success, cancelled.failure.label, cancelled.status) == (False, "cancelled", None)
    assert cancelled.total_tokens is None and cancelled.finished_at >= cancelled.started_at
    [line] = read_lines(user.run.errors, ErrorLine)
    assert line.failure.label == "answer budget exceeded" and DOMAIN["answer"] in [f.file for f in line.failure.frames]
