"""Prefect task `reuse_user`: before the user's memory is built, copy from the earlier runs given
with `--reuse` what this run would produce itself (same fingerprints): the complete memory, then
each successful answer, then each judgment; writes `reuse.json` with where each item came from."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from mobilemem import reuse
from mobilemem.records import ReuseFile
from mobilemem.rundir import write_record
from lifecycle.context import RunContext
from lifecycle.outcome import StepOutcome, reports_state
from lifecycle.reuse_match import match_user


@task(name="reuse_user", retries=0, task_run_name="reuse-user-{user_id}", cache_policy=NO_CACHE,
      persist_result=False)
@reports_state
async def reuse_user(context: RunContext, user_id: int) -> StepOutcome:
    match = match_user(context.reuse, context.scheduled(user_id), context.memory_fingerprints[user_id],
                       context.config.candidate, context.dataset.judge_questions, context.judge_settings,
                       judgments=not context.rejudge)
    if match.source is None:
        return StepOutcome(success=True)
    source = match.source
    reuse.copy_memory(source.run, context.run, user_id)
    for question_id in match.answers:
        reuse.copy_answer(source.run, context.run, user_id, question_id)
    for question_id in match.judgments:
        reuse.copy_judgment(source.run, context.run, user_id, question_id)
    write_record(context.run.user(user_id).reuse, ReuseFile(
        user_id=user_id, memory=source.item(match.memory),
        answers={q: source.item(fingerprint) for q, (fingerprint, _) in match.answers.items()},
        judgments={q: source.item(fingerprint) for q, fingerprint in match.judgments.items()}))
    return StepOutcome(success=True, reused=True, reused_answers={q: text for q, (_, text) in match.answers.items()},
                       reused_judgments=tuple(match.judgments))
