"""Prefect task `build_index`: the candidate's index, once (ReMe's `index_update` + `digest_update`, or
the bm25-rag baseline's bm25s index; nothing for no-memory);
writes `index-response.json`, then the completion marker `memory_usage.json` (the user's memory cost and
the memory's manifest, `mobilemem.memory_manifest`) last. A failed build ends its task run Failed."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from prefect import task
from prefect.cache_policies import NO_CACHE

from mobilemem import memory_manifest
from mobilemem.records import IndexResponseFile, MemoryUsageFile, SessionFile
from mobilemem.rundir import read_record
from mobilemem.usage import summarize
from lifecycle.attempt import attempt
from lifecycle.context import UserContext
from lifecycle.outcome import StepOutcome, reports_state
from lifecycle.gaps import guarded_step, save, write_failure


@task(name="build_index", retries=0, task_run_name="index-user-{user.user_id}", cache_policy=NO_CACHE,
      persist_result=False)
@reports_state
async def build_index(user: UserContext) -> StepOutcome:
    outcome = await guarded_step(user, "index", lambda: _build(user))
    user.progress.set_index("not run" if outcome.not_run else "built" if outcome.success else "failed")
    if not outcome.not_run:
        paths = user.run.user(user.user_id)
        user.dashboard.task_files(f"index of user {user.user_id}", [paths.index_response, paths.memory_usage])
    return outcome


async def _build(user: UserContext) -> StepOutcome:
    user.progress.set_index("building")
    paths = user.run.user(user.user_id)
    tried = await attempt(user, "index", user.candidate.build_index, user_id=user.user_id)
    response, error, started = tried.response, tried.error, tried.started
    if error is not None or response is None:
        assert error is not None and tried.failure is not None
        save(user, paths.index_response, IndexResponseFile(
            started_at=started, finished_at=datetime.now(UTC), user_id=user.user_id, success=False,
            failure=tried.failure), stage="index", user_id=user.user_id)
        return StepOutcome(success=False, failure=tried.failure)
    unsaved = save(user, paths.index_response, IndexResponseFile(
        started_at=started, finished_at=datetime.now(UTC), user_id=user.user_id, success=True,
        documents=response.documents, chunks=response.chunks, build_seconds=response.build_seconds),
        stage="index", user_id=user.user_id)
    if unsaved is None:  # the completion marker, last, and only when everything before it is on disk
        sessions = [read_record(p, SessionFile) for p in sorted(paths.sessions.glob("*.json"))]
        manifest = await asyncio.to_thread(memory_manifest.build, paths)  # seconds at the real size
        unsaved = save(user, paths.memory_usage, MemoryUsageFile(
            user_id=user.user_id, sessions=len(sessions), usage=summarize(r for s in sessions for r in s.requests),
            memory_fingerprint=user.memory_fingerprint, manifest=manifest),
            stage="index", user_id=user.user_id)
    if unsaved is not None:
        return StepOutcome(success=False, failure=write_failure(unsaved))
    return StepOutcome(success=True)
