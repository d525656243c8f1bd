"""Prefect task `judge_answer`: the isolated judge labels one answer; writes `judgment.json` and, when
scored, `metrics.json` and `attribution.json`; a failed or unparseable judgment is a `judge` gap
(`error.json`) and ends its task run Failed. A failed attribution is only an errors.jsonl line."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from prefect import task
from prefect.cache_policies import NO_CACHE

import mobilemem_judge
from mobilemem.dataset import JudgeQuestion
from mobilemem.errors import error_record
from mobilemem.metrics import overlap_scores
from mobilemem.records import JudgmentFile, MetricsFile
from mobilemem.rundir import append_error
from lifecycle.attempt import attempt
from lifecycle.context import UserContext
from lifecycle.evidence import save_attribution
from lifecycle.outcome import StepOutcome, reports_state
from lifecycle.gaps import guarded_step, question_files, record_gap, save, write_failure


@task(name="judge_answer", retries=0, task_run_name="judge-{question.question_id}", cache_policy=NO_CACHE,
      persist_result=False)
@reports_state
async def judge_answer(question: JudgeQuestion, prediction: str, user: UserContext) -> StepOutcome:
    return await guarded_step(user, "judge", lambda: _judged(question, prediction, user),
                              question_id=question.question_id)


async def _judged(question: JudgeQuestion, prediction: str, user: UserContext) -> StepOutcome:
    outcome = await _judge(question, prediction, user)
    question_files(user, question.question_id, "judgment of")
    return outcome


async def _judge(question: JudgeQuestion, prediction: str, user: UserContext) -> StepOutcome:
    paths = user.run.user(user.user_id).question(question.question_id)
    ids = {"user_id": question.user_id, "question_id": question.question_id}
    tried = await attempt(user, "judge", lambda: mobilemem_judge.judge_answer(
        question, prediction, user.judge_model, user.config.judge.rubric,
        timeout_s=user.config.judge.timeout_s, max_reply_bytes=user.config.judge.max_reply_bytes), **ids)
    judgment, error = tried.response, tried.error
    unsaved = save(user, paths.judgment, JudgmentFile(
        started_at=tried.started, finished_at=datetime.now(UTC), user_id=question.user_id,
        question_id=question.question_id, success=error is None, label=judgment.label if judgment else None,
        decided_by=judgment.decided_by if judgment else None, raw_reply=judgment.raw_reply if judgment else None,
        usage=tried.usage, requests=tried.requests, failure=tried.failure,
        judgment_fingerprint=mobilemem_judge.judgment_fingerprint(question, prediction, user.judge_settings)),
        stage="judge", **ids)
    if error is None and judgment is not None and unsaved is None:
        scores = overlap_scores(prediction, question.answer)
        unsaved = save(user, paths.metrics, MetricsFile(
            user_id=question.user_id, question_id=question.question_id,
            llm_judge=1 if judgment.label == "CORRECT" else 0, f1=scores.f1, bleu1=scores.bleu1,
            reference=scores.reference), stage="judge", **ids)
        if unsaved is None:
            user.progress.bump(judged=1)
            try:  # the question stays scored whatever happens here
                await asyncio.to_thread(save_attribution, user, question, judgment.label)
            except Exception as exc:
                append_error(user.run, error_record(exc, stage="judge", **ids))
            return StepOutcome(success=True)
    if error is None:  # judged, but the judgment could not be kept: not scored
        return await record_gap(user, question.question_id, "judge", write_failure(unsaved))
    assert error is not None and tried.failure is not None
    return await record_gap(user, question.question_id, "judge", tried.failure)
