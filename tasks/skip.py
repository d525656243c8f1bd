"""Prefect task `skip_question`: a question that cannot be answered because its user's history or
index failed; writes `job.json` and `error.json`, and its task run ends in the state "History gap" /
"Index gap"."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from mobilemem.dataset import CandidateQuestion
from mobilemem.errors import error_record
from mobilemem.records import Failure, GapStage
from mobilemem.rundir import append_error
from lifecycle.context import UserContext
from lifecycle.outcome import StepOutcome, reports_state
from lifecycle.gaps import question_files, record_gap, write_job


@task(name="skip_question", retries=0, task_run_name="skip-{job.question_id}", cache_policy=NO_CACHE,
      persist_result=False)
@reports_state
async def skip_question(job: CandidateQuestion, user: UserContext, stage: GapStage, reason: str,
                        failure: Failure | None) -> StepOutcome:
    try:
        write_job(job, user)
        outcome = await record_gap(user, job.question_id, stage, failure, reason)
        question_files(user, job.question_id, "skipped question")
    except Exception as exc:  # the question stays a gap; what went wrong is recorded beside it
        append_error(user.run, error_record(exc, stage="run", user_id=user.user_id, question_id=job.question_id))
        outcome = StepOutcome(success=False, failure=failure, gap_stage=stage, gap_reason=reason)
    return outcome.model_copy(update={"blocked": True})
