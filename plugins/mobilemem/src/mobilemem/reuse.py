"""Building on earlier runs (`--reuse RUN_DIR`): find a user's complete memory, a question's
successful answer and its judgment in earlier run directories by fingerprint, and copy them into
this run. No Prefect, no model: file operations only.

Earlier runs are searched in the order given (newest first wins). A memory is reused only when
complete (its `memory_usage.json`, written last, exists) and its fingerprint equals this run's; a
partial history is never resumed. An answer is reused only when successful and of the same answer
fingerprint, a judgment only when successful, scored and of the same judgment fingerprint (with
its metrics and, when the earlier run has one, its evidence attribution).

Copies never change the earlier run: files that nothing rewrites in place (ReMe's saved images and
agent states, this runner's records, all written once or atomically) are hard links where the file
system allows; every other workspace file (ReMe's indexes and notes, which ReMe may rewrite) is a
real copy.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from mobilemem.records import (
    AnswerResponseFile,
    JudgmentFile,
    MemoryUsageFile,
    ReusedItem,
    RunFile,
)
from mobilemem.rundir import RunDir, read_record

WRITE_ONCE = ("session", "mem_session")  # workspace folders whose files are never rewritten


@dataclass(frozen=True)
class EarlierRun:
    run: RunDir
    run_id: str | None

    @classmethod
    def open(cls, root: Path) -> EarlierRun:
        return cls(RunDir(root), read_record(RunDir(root).run, RunFile).flow_run_id)

    def item(self, fingerprint: str) -> ReusedItem:
        return ReusedItem(run_dir=str(self.run.root), run_id=self.run_id, fingerprint=fingerprint)


def _link_or_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:  # another file system, or no hard links: a copy
        shutil.copy2(source, target)


def _copy_tree(source: Path, target: Path, link: bool) -> None:
    for path in sorted(source.rglob("*")):
        if path.is_file() and not path.is_symlink():
            destination = target / path.relative_to(source)
            if link:
                _link_or_copy(path, destination)
            else:
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, destination)


def find_memory(earlier: list[EarlierRun], user_id: int, fingerprint: str) -> EarlierRun | None:
    for candidate in earlier:
        marker = candidate.run.user(user_id).memory_usage
        if marker.is_file() and read_record(marker, MemoryUsageFile).memory_fingerprint == fingerprint:
            return candidate
    return None


def copy_memory(source: RunDir, target: RunDir, user_id: int) -> None:
    """The workspace, sessions/*.json, index-response.json, then (last: it marks the memory complete)
    memory_usage.json."""
    mine, theirs = target.user(user_id), source.user(user_id)
    kept = sorted(theirs.workspace.iterdir()) if theirs.workspace.is_dir() else []  # no-memory keeps none
    for folder in (p for p in kept if p.is_dir()):
        _copy_tree(folder, mine.workspace / folder.name, link=folder.name in WRITE_ONCE)
    for path in (p for p in kept if p.is_file()):
        mine.workspace.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, mine.workspace / path.name)
    _copy_tree(theirs.sessions, mine.sessions, link=True)
    _link_or_copy(theirs.index_response, mine.index_response)
    _link_or_copy(theirs.memory_usage, mine.memory_usage)


def find_answer(source: RunDir, user_id: int, question_id: str, fingerprint: str) -> AnswerResponseFile | None:
    path = source.user(user_id).question(question_id).answer_response
    if not path.is_file():
        return None
    record = read_record(path, AnswerResponseFile)
    ok = record.response is not None and record.response.success and record.error_id is None
    return record if ok and record.answer_fingerprint == fingerprint else None


def copy_answer(source: RunDir, target: RunDir, user_id: int, question_id: str) -> None:
    theirs, mine = source.user(user_id).question(question_id), target.user(user_id).question(question_id)
    _link_or_copy(theirs.job, mine.job)
    _link_or_copy(theirs.answer_response, mine.answer_response)


def find_judgment(source: RunDir, user_id: int, question_id: str, fingerprint: str) -> bool:
    q = source.user(user_id).question(question_id)
    if not (q.judgment.is_file() and q.metrics.is_file()):
        return False
    record = read_record(q.judgment, JudgmentFile)
    return record.success and record.judgment_fingerprint == fingerprint


def copy_judgment(source: RunDir, target: RunDir, user_id: int, question_id: str) -> None:
    theirs, mine = source.user(user_id).question(question_id), target.user(user_id).question(question_id)
    _link_or_copy(theirs.judgment, mine.judgment)
    _link_or_copy(theirs.metrics, mine.metrics)
    if theirs.attribution.is_file():  # runs before evidence attribution have none
        _link_or_copy(theirs.attribution, mine.attribution)
