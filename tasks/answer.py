"""Prefect task `answer_question`: the candidate answers one question (a fresh ReMe answer agent, or
a baseline's one request); writes `job.json`, `answer-response.json`
and, for a gap, `error.json` plus one `errors.jsonl` line (the task run ends Failed)."""

from __future__ import annotations

from datetime import UTC, datetime

from prefect import task
from prefect.cache_policies import NO_CACHE

from mobilemem import fingerprints
from mobilemem.dataset import CandidateQuestion
from mobilemem.records import AnswerResponseFile
from lifecycle.attempt import attempt
from lifecycle.context import UserContext
from lifecycle.outcome import StepOutcome, reports_state
from lifecycle.gaps import guarded_step, question_files, record_gap, save, write_failure, write_job


@task(name="answer_question", retries=0, task_run_name="answer-{job.question_id}", cache_policy=NO_CACHE,
      persist_result=False)
@reports_state
async def answer_question(job: CandidateQuestion, user: UserContext) -> StepOutcome:
    return await guarded_step(user, "answer", lambda: _answer(job, user), question_id=job.question_id)


async def _answer(job: CandidateQuestion, user: UserContext) -> StepOutcome:
    outcome = await _ask(job, user)
    question_files(user, job.question_id, "answer to")
    return outcome


async def _ask(job: CandidateQuestion, user: UserContext) -> StepOutcome:
    if (unsaved := write_job(job, user)) is not None:  # nothing is asked whose record cannot be kept
        return await record_gap(user, job.question_id, "answer", write_failure(unsaved))
    paths = user.run.user(user.user_id).question(job.question_id)
    ids = {"user_id": job.user_id, "question_id": job.question_id}
    tried = await attempt(user, "answer", lambda: user.candidate.answer_question(job), **ids)
    response, error = tried.response, tried.error
    unsaved = save(user, paths.answer_response, AnswerResponseFile(
        started_at=tried.started, finished_at=datetime.now(UTC), user_id=job.user_id, question_id=job.question_id,
        response=response, usage=tried.usage, requests=tried.requests, latency_s=round(tried.seconds, 4),
        failure=tried.failure,
        answer_fingerprint=fingerprints.answer_fingerprint(user.memory_fingerprint, job, user.config.candidate)),
        stage="answer", **ids)
    if error is None and unsaved is None:
        user.progress.bump(answered=1)
        return StepOutcome(success=True, answer=response.answer if response else "")
    if error is None:  # answered, but the answer could not be kept: it is not judged
        return await record_gap(user, job.question_id, "answer", write_failure(unsaved))
    assert tried.failure is not None
    return await record_gap(user, job.question_id, "answer", tried.failure)
