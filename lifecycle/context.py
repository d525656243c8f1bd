"""What the tasks of one run share in this process: models, limits, dataset views, the dashboard.

A run's `RunContext` is registered under its run directory by the parent flow; subflows receive
only the run directory (flow parameters must stay small and serializable) and look it up here.
The semaphores live here, in the parent flow's process, never in flow parameters.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path

from agentscope.model import ChatModelBase

from mobilemem.candidate import Candidate
from mobilemem.records import Config, JudgeSettingsFile
from mobilemem.disk import DiskGuard
from mobilemem.dataset import Dataset, ScheduledUser
from mobilemem.reuse import EarlierRun
from mobilemem.rundir import RunDir
from lifecycle.collections_pacer import CollectionPacer
from lifecycle.dashboard import Dashboard, UserProgress
from lifecycle.limits import RunLimits, Slots


@dataclass
class RunContext:
    run: RunDir
    dataset: Dataset
    config: Config
    candidate_model: ChatModelBase
    judge_model: ChatModelBase
    user_slots: asyncio.Semaphore  # user_concurrency: users evaluated at once
    subflow_slots: asyncio.Semaphore  # user_concurrency + 1: user subflow runs that exist (one created ahead)
    creating_subflow: asyncio.Lock  # one user subflow run created at a time (lifecycle.orchestration)
    query_slots: Slots  # query_concurrency: held from a question's answer start to its judgment end
    judge_slots: Slots  # judge_concurrency: an additional cap on judgments alone
    disk: DiskGuard
    dashboard: Dashboard
    judge_settings: JudgeSettingsFile
    memory_fingerprints: dict[int, str]  # per user (mobilemem.fingerprints), written into its files
    reuse: list[EarlierRun]  # `--reuse`, newest first
    rejudge: bool  # judge every reused answer again; never ask the candidate
    workers: str | None = None  # --workers: the work pool whose workers run the users (DESIGN §12)
    run_limits: RunLimits | None = None  # --workers: the run's Prefect concurrency limits, deleted at its end
    log_handler: logging.Handler | None = None
    heartbeat: asyncio.Task | None = None
    session_notes: dict[int, dict[str, list[str]]] = field(default_factory=dict)  # per user, for attribution
    collections: CollectionPacer = field(default_factory=CollectionPacer)  # one for the process's users

    def scheduled(self, user_id: int) -> ScheduledUser:
        return next(u for u in self.dataset.users if u.user_id == user_id)


@dataclass(frozen=True)
class UserContext:
    """Everything a task of one user needs (passed to tasks, never to flows)."""

    run: RunDir
    user_id: int
    candidate: Candidate  # the user's candidate (ReMe Image or a baseline), open from the first session to the last question
    dataset_root: Path
    config: Config
    candidate_model: ChatModelBase
    judge_model: ChatModelBase
    progress: UserProgress
    dashboard: Dashboard
    disk: DiskGuard
    judge_settings: JudgeSettingsFile
    memory_fingerprint: str
    collections: CollectionPacer = field(default_factory=CollectionPacer)


_RUNS: dict[str, RunContext] = {}


def register(context: RunContext) -> None:
    _RUNS[str(context.run.root)] = context


def release(run: RunDir) -> None:
    _RUNS.pop(str(run.root), None)


def registered(run_dir: Path) -> bool:
    """Whether the run's parent flow is in this process (else a user is a deployment run on a worker)."""
    return str(run_dir) in _RUNS


def lookup(run_dir: Path) -> RunContext:
    return _RUNS[str(run_dir)]


def user_context(context: RunContext, user_id: int, candidate: Candidate) -> UserContext:
    return UserContext(run=context.run, user_id=user_id, candidate=candidate,
                       dataset_root=context.dataset.root, config=context.config,
                       candidate_model=context.candidate_model, judge_model=context.judge_model,
                       progress=context.dashboard.progress[user_id], dashboard=context.dashboard,
                       disk=context.disk, judge_settings=context.judge_settings,
                       memory_fingerprint=context.memory_fingerprints[user_id], collections=context.collections)
