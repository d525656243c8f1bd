"""Prefect task `reuse_user`: before the user's memory is built, copy from the earlier runs given
with `--reuse` what this run would produce itself (same fingerprints): the complete memory, checked
against its manifest, then each successful answer, then each judgment; writes `reuse.json` with
where each item came from and what was skipped (and so is done again)."""

from __future__ import annotations

import asyncio

from prefect import task
from prefect.cache_policies import NO_CACHE

from mobilemem.records import ReuseFile
from mobilemem.rundir import write_record
from lifecycle.context import RunContext
from lifecycle.outcome import StepOutcome, reports_state
from lifecycle.reuse_match import Wanted, take_user


@task(name="reuse_user", retries=0, task_run_name="reuse-user-{user_id}", cache_policy=NO_CACHE,
      persist_result=False)
@reports_state
async def reuse_user(context: RunContext, user_id: int) -> StepOutcome:
    wanted = Wanted(context.scheduled(user_id), context.memory_fingerprints[user_id], context.config.candidate,
                    context.dataset.judge_questions, context.judge_settings, judgments=not context.rejudge)
    # hashing a memory's files takes seconds at the real size: off the event loop the other users share
    match = await asyncio.to_thread(take_user, context.reuse, context.run, wanted)
    if match.source is None:  # built in this run; reuse.json only says why, when something was skipped
        if match.skipped:
            write_record(context.run.user(user_id).reuse, ReuseFile(user_id=user_id, skipped=match.skipped))
        return StepOutcome(success=True)
    source = match.source
    write_record(context.run.user(user_id).reuse, ReuseFile(
        user_id=user_id, memory=source.item(match.memory),
        answers={q: source.item(fingerprint) for q, (fingerprint, _) in match.answers.items()},
        judgments={q: source.item(fingerprint) for q, fingerprint in match.judgments.items()},
        skipped=match.skipped))
    return StepOutcome(success=True, reused=True, reused_answers={q: text for q, (_, text) in match.answers.items()},
                       reused_judgments=tuple(match.judgments))
