"""Prefect task `reuse_user`: before the user's memory is built, copy from the earlier runs given
with `--reuse` what this run would produce itself (same fingerprints): the complete memory, then
each successful answer, then each judgment; writes `reuse.json` with where each item came from."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

import mobilemem_judge
from mobilemem import fingerprints, reuse
from mobilemem.records import ReuseFile
from mobilemem.rundir import write_record
from lifecycle.context import RunContext
from lifecycle.outcome import StepOutcome, reports_state


@task(name="reuse_user", retries=0, task_run_name="reuse-user-{user_id}", cache_policy=NO_CACHE,
      persist_result=False)
@reports_state
async def reuse_user(context: RunContext, user_id: int) -> StepOutcome:
    memory = context.memory_fingerprints[user_id]
    source = reuse.find_memory(context.reuse, user_id, memory)
    if source is None:
        return StepOutcome(success=True)
    reuse.copy_memory(source.run, context.run, user_id)
    answers_from, judgments_from, answers = {}, {}, {}
    for job in context.scheduled(user_id).questions:
        answer_id = fingerprints.answer_fingerprint(memory, job, context.config.candidate)
        earlier = reuse.find_answer(source.run, user_id, job.question_id, answer_id)
        if earlier is None or earlier.response is None:
            continue
        reuse.copy_answer(source.run, context.run, user_id, job.question_id)
        answers_from[job.question_id], answers[job.question_id] = source.item(answer_id), earlier.response.answer or ""
        judgment_id = mobilemem_judge.judgment_fingerprint(context.dataset.judge_questions[job.question_id],
                                                           answers[job.question_id], context.judge_settings)
        if reuse.find_judgment(source.run, user_id, job.question_id, judgment_id):
            reuse.copy_judgment(source.run, context.run, user_id, job.question_id)
            judgments_from[job.question_id] = source.item(judgment_id)
    write_record(context.run.user(user_id).reuse, ReuseFile(
        user_id=user_id, memory=source.item(memory), answers=answers_from, judgments=judgments_from))
    return StepOutcome(success=True, reused=True, reused_answers=answers, reused_judgments=tuple(judgments_from))
