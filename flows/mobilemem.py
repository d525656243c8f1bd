"""The Prefect flows of mobilemem-bench. `python flows/mobilemem.py ...` (or `python -m flows.mobilemem`)
is the command line, which lives in cli/ (its commands, console and exit codes).

`mobilemem` (parent flow, named `<model>-<UTC start>`) → one `mobilemem-user` subflow per
scheduled user (`user-<id>`), at most `user_concurrency` at once; inside, on the user's own ReMe
application (opened before the first session, closed after the last question), the chronological
chain of `ingest_session` tasks (a failure ends it), `build_index`, then per question
`answer_question` → `judge_answer` (or `skip_question` when the history or index failed). A
question holds one of `query_concurrency` slots from the start of its answer to the end of its
judgment, across all users; `judge_concurrency` caps the judgments alone. A failed step is a Failed
task run and a gap record; the flow always finishes with `finalize` (summary.json, results.jsonl,
report.html).
With `--workers POOL` (DESIGN §12) each user is instead a run of the deployment
`mobilemem-user/evaluate-user` on the pool's workers, the same `evaluate_user` flow: the parent starts
and watches it (`lifecycle.user_deployments`), the worker's process rebuilds the user's context from
run.json (`lifecycle.deployed_user`), and the question and judgment limits are Prefect global
concurrency limits of the run.
Task arguments are passed `quote()`d: they hold models, ReMe applications and dataset views that Prefect
would otherwise walk on every call looking for upstream futures (most of the runner's CPU).
The parent flow run ends `Completed: <scored>/<expected> scored,
<gaps> gaps`, or `Failed: ...` when nothing was scored or the run stopped early.
"""

from __future__ import annotations

import asyncio
import runpy
import sys
from contextlib import ExitStack
from pathlib import Path

if __name__ == "__main__":  # the command line is cli/; flows/ first on sys.path would shadow `mobilemem`
    sys.path[0] = str(Path(__file__).resolve().parents[1])
    runpy.run_module("cli", run_name="__main__")

from prefect import flow, get_run_logger
from prefect.states import Failed, State
from prefect.utilities.annotations import quote

from mobilemem.candidates import remembers
from mobilemem.dataset import CandidateQuestion
from mobilemem.errors import ConfigError, DatasetError, MobilememError, error_record
from mobilemem.models import raise_if_cancelled
from mobilemem.failure_kinds import FailureKind
from mobilemem.records import Failure, RunRequest, RunState
from mobilemem.rundir import append_error
from mobilemem.simulator import start_simulator
from lifecycle import run_plan, run_setup
from tasks.answer import answer_question
from lifecycle.context import RunContext, UserContext, lookup, registered
from lifecycle.deployed_user import close_deployed_user, open_deployed_user
from lifecycle.user_deployments import evaluate_deployed_user
from tasks.finalize import finalize
from tasks.index import build_index
from tasks.ingest import ingest_session
from tasks.judge import judge_answer
from tasks.reuse import reuse_user
from tasks.skip import skip_question
from lifecycle.orchestration import all_or_none, mark_started, start_patiently
from lifecycle.outcome import StepOutcome, run_state, run_step
from lifecycle.gaps import record_orphaned_questions
from lifecycle.termination import signals_reach_the_flow


Blocked = tuple[str, str, Failure | None]  # the gap that blocks a user's questions: stage, reason, failure
NOT_RUN: Blocked = ("not_run", "the run stopped starting new work", None)
REJUDGE_NO_MEMORY = "rejudge: the earlier run has no reusable memory of this user"
REJUDGE_NO_ANSWER = "rejudge: the earlier run has no reusable answer"


async def _history(sessions, user: UserContext) -> Blocked | None:
    """Ingest the sessions in order (none for a candidate that remembers nothing) and build the
    index; the gap that blocks the questions, if any."""
    for session in sessions if remembers(user.config.candidate.kind) else []:
        outcome = await run_step(ingest_session, quote(session), quote(user))
        if outcome.not_run:
            return NOT_RUN
        if not outcome.success:
            user.progress.set_index("skipped")
            return "history", f"ingest failed: {_label(outcome)}", outcome.failure
    outcome = await run_step(build_index, quote(user))
    if outcome.not_run:
        return NOT_RUN
    if not outcome.success:
        return "index", _label(outcome), outcome.failure
    return None


def _label(outcome: StepOutcome) -> str:
    return outcome.failure.label if outcome.failure else FailureKind.FAILED


async def _question(context: RunContext, user: UserContext, job: CandidateQuestion,
                    blocked: Blocked | None, reused: StepOutcome) -> None:
    if blocked == NOT_RUN:  # the run stopped starting new work: the question is not attempted
        return
    if blocked is not None:
        stage, reason, failure = blocked
        await run_step(skip_question, quote(job), quote(user), stage, reason, quote(failure))
        return
    if job.question_id in reused.reused_judgments:  # answer and judgment copied from an earlier run
        user.progress.bump(answered=1, judged=1)
        return
    if context.rejudge and job.question_id not in reused.reused_answers:  # the candidate is never asked
        await run_step(skip_question, quote(job), quote(user), "answer", REJUDGE_NO_ANSWER, None)
        return
    async with context.query_slots:  # one slot from the start of the answer to the end of its judgment
        if job.question_id in reused.reused_answers:
            user.progress.bump(answered=1)
            answered = StepOutcome(success=True, answer=reused.reused_answers[job.question_id])
        else:
            answered = await run_step(answer_question, quote(job), quote(user))
        if answered.success:
            async with context.judge_slots:
                await run_step(judge_answer, quote(context.dataset.judge_questions[job.question_id]),
                               answered.answer or "", quote(user))


@flow(name="mobilemem-user", retries=0, flow_run_name="user-{user_id}", persist_result=False)
async def evaluate_user(user_id: int, run_dir: Path) -> dict[str, int]:
    """A user's subflow of the parent in this process, or (`--workers`) a run of the deployment
    mobilemem-user/evaluate-user on a worker, which rebuilds its context from run.json."""
    mark_started()
    if registered(run_dir):  # the parent flow is in this process
        return await _evaluate_user(lookup(run_dir), user_id)
    deployed = await open_deployed_user(run_dir, user_id)
    try:
        if deployed.context is None:  # this worker differs from the parent: every question is a gap
            return {"answered": 0, "judged": 0, "gaps": sum(q.user_id == user_id for q in deployed.manifest.questions)}
        return await _evaluate_user(deployed.context, user_id)
    finally:
        await close_deployed_user(deployed)


async def _evaluate_user(context: RunContext, user_id: int) -> dict[str, int]:
    scheduled = context.scheduled(user_id)
    # The user limit covers the work only: this subflow's own start and end (seconds of Prefect
    # API calls on SQLite) overlap with other users' work instead of idling a slot.
    async with context.user_slots:
        context.dashboard.open_user(user_id)
        reused = await run_step(reuse_user, quote(context), user_id) if context.reuse else StepOutcome(success=True)
        user = await run_setup.open_user(context, user_id)  # the user's ReMe application
        try:
            if reused.reused:
                user.progress.bump(ingested=len(scheduled.sessions))
                user.progress.set_index("reused")
            if reused.reused or context.rejudge:
                blocked = None if reused.reused else ("history", REJUDGE_NO_MEMORY, None)
            else:
                blocked = await _history(scheduled.sessions, user)
            # A question that fails outside its steps cancels its siblings (the parent records them as
            # gaps) before the memory closes: none runs against a closed memory.
            await all_or_none(_question(context, user, job, blocked, reused) for job in scheduled.questions)
            user.progress.finish()
        finally:
            await run_setup.close_user(user)
    return {"answered": user.progress.answered, "judged": user.progress.judged, "gaps": user.progress.gaps}


async def _user(context: RunContext, user_id: int) -> None:
    """One user's subflow; a failure of the subflow itself (not of a step) is recorded, not raised."""
    try:
        if context.workers is not None:  # a deployment run on the pool's workers, watched to its end
            await evaluate_deployed_user(context, user_id)
            return
        async with context.subflow_slots:  # created only when it can start: no queue of idle subflow runs
            state = await start_patiently(lambda: evaluate_user(user_id, context.run.root, return_state=True),
                                          f"the subflow of user {user_id}", context.creating_subflow)
        failure = await state.aresult(raise_on_failure=False) if state.is_failed() else None
    except Exception as exc:  # e.g. the Prefect API refused to create the subflow run
        failure = exc
    raise_if_cancelled()  # an interrupted run stops here; its unfinished users are not errors
    if failure is not None:
        exc = failure if isinstance(failure, BaseException) else MobilememError(str(failure))
        error = error_record(exc, stage="run", user_id=user_id)
        append_error(context.run, error)
        record_orphaned_questions(context, user_id, error)


@flow(name="mobilemem", retries=0, persist_result=False, flow_run_name=run_setup.run_name)
async def mobilemem(dataset: Path, output: Path, model: str | None = None, user_concurrency: int | None = None,
                    query_concurrency: int | None = None, config: Path | None = None, users: list[int] | None = None,
                    limit_questions: int | None = None, simulate: bool = False,
                    reuse: list[Path] | None = None, rejudge: Path | None = None,
                    judge_model: str | None = None, candidate: str | None = None, workers: str | None = None,
                    endpoint_limit: int | None = None, endpoint_key: str | None = None) -> State:
    """Evaluate the ReMe Image memory on the visual_reasoning questions of MobileMem-Omni."""
    request = RunRequest(dataset=dataset, output=output, model=model, user_concurrency=user_concurrency,
                         query_concurrency=query_concurrency, config=config, users=users,
                         limit_questions=limit_questions, simulate=simulate, reuse=reuse, rejudge=rejudge,
                         judge_model=judge_model, candidate=candidate, workers=workers,
                         endpoint_limit=endpoint_limit, endpoint_key=endpoint_key)
    try:
        plan = run_plan.planned(request)  # the command line's, or a deployment run's own preflight
    except (ConfigError, DatasetError) as exc:  # a deployment run: one line in its state and log, no traceback
        get_run_logger().error("refused to start: %s", exc)
        return Failed(message=f"refused to start: {exc}")
    with ExitStack() as stack:
        stack.enter_context(signals_reach_the_flow())
        url = stack.enter_context(start_simulator(keep_log=False)).base_url if simulate else None
        context = await run_setup.open_run(plan, url)
        state: RunState = "interrupted"
        try:
            await asyncio.gather(*(_user(context, u.user_id) for u in plan.dataset.users))
            state = "completed" if context.disk.reason is None else "interrupted_by_error"
        finally:
            await run_setup.close_run(context, state)
        summary = await finalize(context.run.root)
        # the files say what they could record; a run.json a full disk left at `running` does not decide
        return run_state(summary if summary.state == state else summary.model_copy(update={"state": state}))
