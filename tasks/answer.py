"""Prefect task `answer_question`: the candidate answers one question (a fresh ReMe answer agent, or
a baseline's one request); writes `job.json`, `answer-response.json`
and, for a gap, `error.json` plus one `errors.jsonl` line (the task run ends Failed)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from prefect import task
from prefect.cache_policies import NO_CACHE

from mobilemem import fingerprints, usage
from mobilemem.dataset import CandidateQuestion
from mobilemem.errors import FailureKind, error_record, failure_record
from mobilemem.models import raise_if_cancelled
from mobilemem.records import AnswerResponse, AnswerResponseFile, ErrorLine, Failure
from mobilemem.rundir import append_error
from lifecycle.context import UserContext
from lifecycle.outcome import NOT_RUN, WRITE_ERROR, StepOutcome, reports_state
from lifecycle.step_records import question_files, record_gap, save, step_failed, write_job


@task(name="answer_question", retries=0, task_run_name="answer-{job.question_id}", cache_policy=NO_CACHE,
      persist_result=False)
@reports_state
async def answer_question(job: CandidateQuestion, user: UserContext) -> StepOutcome:
    if user.disk.stopped():
        return NOT_RUN
    try:
        outcome = await _answer(job, user)
        question_files(user, job.question_id, "answer to")
    except Exception as exc:
        raise_if_cancelled()
        outcome = await step_failed(user, exc, "answer", question_id=job.question_id)
    return outcome


async def _answer(job: CandidateQuestion, user: UserContext) -> StepOutcome:
    if (unsaved := write_job(job, user)) is not None:  # nothing is asked whose record cannot be kept
        return await record_gap(user, job.question_id, "answer", WRITE_ERROR, unsaved.id, unsaved.failure.message)
    paths = user.run.user(user.user_id).question(job.question_id)
    ids = {"user_id": job.user_id, "question_id": job.question_id}
    started, clock, response, error = datetime.now(UTC), time.perf_counter(), None, None
    with usage.scope() as scope:
        try:
            response = await user.candidate.answer_question(job)
        except Exception as exc:
            raise_if_cancelled()
            error = error_record(exc, stage="answer", **ids)
    latency = time.perf_counter() - clock
    if response is not None and not response.success:
        said = response.failure or Failure(kind=FailureKind.FAILED)
        error = failure_record(stage="answer", error_type=said.label, reason=said.message or "failed", frames=usage.failure_frames(scope.requests), **ids)
    unsaved = save(user, paths.answer_response, AnswerResponseFile(
        started_at=started, finished_at=datetime.now(UTC), user_id=job.user_id, question_id=job.question_id,
        response=response, usage=scope.usage(), requests=scope.requests, latency_s=round(latency, 4),
        failure=_failure(response, error),
        answer_fingerprint=fingerprints.answer_fingerprint(user.memory_fingerprint, job, user.config.candidate)),
        stage="answer", **ids)
    if error is None and unsaved is None:
        user.progress.bump(answered=1)
        return StepOutcome(success=True, answer=response.answer if response else "")
    if error is None:  # answered, but the answer could not be kept: it is not judged
        return await record_gap(user, job.question_id, "answer", WRITE_ERROR, unsaved.id, unsaved.failure.message)
    append_error(user.run, error)
    user.disk.probe()
    failure = _failure(response, error)
    assert failure is not None
    return await record_gap(user, job.question_id, "answer", failure.label, error.id, error.failure.message)


def _failure(response: AnswerResponse | None, error: ErrorLine | None) -> Failure | None:
    """The step's failure: what the candidate said of it, or what it raised; pointing at its line."""
    if error is None:
        return None
    said = response.failure if response is not None else None
    return (said or error.failure).model_copy(update={"error_id": error.id, "frames": [],
                                                      "message": error.failure.message})
