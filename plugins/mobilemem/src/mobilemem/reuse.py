"""Building on earlier runs (`--reuse RUN_DIR`): find a user's complete memory, a question's
successful answer and its judgment in earlier run directories by fingerprint, and copy them into
this run. No Prefect, no model: file operations only.

An earlier run is read through `RunReader`, never trusted: no symbolic link is followed, every
record is validated, and a damaged, linked or missing item is skipped with one line naming the
file (what is skipped is done again in this run; its neighbours are still reused).

Earlier runs are searched in the order given (newest first wins). A memory is reused only when
complete (its `memory_usage.json`, written last, is valid), of this run's fingerprint, and its
files are those of its manifest (`mobilemem.memory_manifest`): each is checked while it is copied,
and the first that differs (missing, a link, not a regular file, another size or sha256) discards
the copy. An answer is reused only when successful and of the same answer fingerprint (with its
agent state, a regular file of the earlier workspace), a judgment only when successful, scored and
of the same judgment fingerprint (with its metrics and, when the earlier run has one, its evidence
attribution).

Copies never change the earlier run and bring nothing from outside it: only regular files inside
it are copied, opened without following links. Files that nothing rewrites in place (ReMe's saved
images and agent states, this runner's records, all written once or atomically) are hard links
where the file system allows, checked to be the very file that was read; every other workspace
file (ReMe's indexes and notes, which ReMe may rewrite) is a real copy.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ValidationError

from mobilemem.errors import ConfigError
from mobilemem.records import (
    AnswerResponseFile,
    AttributionFile,
    IndexResponseFile,
    JobFile,
    JudgmentFile,
    ManifestEntry,
    MemoryUsageFile,
    MetricsFile,
    ReusedItem,
    SessionFile,
)
from mobilemem.run_copy import copy_file, copy_record
from mobilemem.run_reader import DamagedFile, NotARunDirectory, RunReader, validation_summary
from mobilemem.rundir import RunDir, UserDir

WRITE_ONCE = ("session", "mem_session")  # workspace folders whose files are never rewritten
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EarlierRun:
    reader: RunReader
    run_id: str | None

    @classmethod
    def open(cls, root: Path, label: str = "--reuse") -> EarlierRun:
        """ConfigError, in one line, when `root` is no run directory or its run.json is damaged."""
        try:
            reader = RunReader.open(Path(root))
        except (NotARunDirectory, DamagedFile) as exc:
            raise ConfigError(f"{label} {root}: {exc}") from None
        return cls(reader, reader.plan.flow_run_id)

    @property
    def run(self) -> RunDir:
        return self.reader.run

    def item(self, fingerprint: str) -> ReusedItem:
        return ReusedItem(run_dir=str(self.run.root), run_id=self.run_id, fingerprint=fingerprint)


@dataclass(frozen=True)
class Memory:
    """A complete memory of one user in an earlier run: its memory_usage.json, with a manifest."""

    source: EarlierRun
    usage: MemoryUsageFile


def report_skipped(user_id: int, lines: list[str]) -> None:
    for line in lines:
        log.warning("reuse, user %s: %s", user_id, line)


def memories(earlier: list[EarlierRun], user_id: int, fingerprint: str, skipped: list[str]) -> Iterator[Memory]:
    """The complete memories of the user with this fingerprint, in the order of the runs; a damaged
    memory_usage.json, or one without a manifest (runs before issue 22), is a line in `skipped`."""
    for candidate in earlier:
        path = candidate.run.user(user_id).memory_usage
        try:
            usage = candidate.reader.maybe(path, MemoryUsageFile)
        except DamagedFile as exc:
            skipped.append(f"{exc}: that memory is not reused")
            continue
        if usage is None or usage.memory_fingerprint != fingerprint:
            continue
        if usage.manifest is None:
            skipped.append(f"{path}: no manifest (written before manifests existed): that memory is not reused")
            continue
        yield Memory(candidate, usage)


def _memory_record(path: str) -> type[BaseModel] | None:
    if path == "index-response.json":
        return IndexResponseFile
    return SessionFile if path.startswith("sessions/") and path.endswith(".json") else None


def _copy_entry(reader: RunReader, theirs: UserDir, mine: UserDir, entry: ManifestEntry) -> str | None:
    """One file of the manifest copied and checked; why it differs, in one line, or None."""
    source, target = theirs.root / entry.path, mine.root / entry.path
    parts = entry.path.split("/")
    link = parts[0] != "workspace" or (len(parts) > 2 and parts[1] in WRITE_ONCE)
    try:
        if copy_file(reader, source, target, link, entry.size) != entry.sha256:
            return f"{source}: its sha256 differs from its manifest's"
        if (model := _memory_record(entry.path)) is not None:
            model.model_validate_json(target.read_bytes())
    except DamagedFile as exc:
        return str(exc)
    except ValidationError as exc:
        return f"{source}: {validation_summary(exc, model)}"
    except OSError as exc:
        return f"{target}: cannot be copied: {exc.strerror or exc}"
    return None


def discard_memory(mine: UserDir) -> None:
    """What a memory copy that failed its check left in this run (this run's own files only)."""
    for folder in (mine.workspace, mine.sessions):
        shutil.rmtree(folder, ignore_errors=True)
    mine.index_response.unlink(missing_ok=True)


def copy_memory(memory: Memory, target: RunDir, user_id: int) -> str | None:
    """The manifest's files, each checked while it is copied, then (last: it marks the memory
    complete) memory_usage.json. On the first file that differs, the copy is discarded and the
    one-line reason, naming that file, returned."""
    reader, theirs, mine = memory.source.reader, memory.source.run.user(user_id), target.user(user_id)
    for entry in memory.usage.manifest or ():
        if (reason := _copy_entry(reader, theirs, mine, entry)) is not None:
            discard_memory(mine)
            return reason
    try:
        if copy_record(reader, theirs.memory_usage, mine.memory_usage, MemoryUsageFile) == memory.usage:
            return None
        reason = f"{theirs.memory_usage}: changed while its memory was copied"
    except DamagedFile as exc:
        reason = str(exc)
    mine.memory_usage.unlink(missing_ok=True)
    discard_memory(mine)
    return reason


def find_answer(source: EarlierRun, user_id: int, question_id: str, fingerprint: str,
                skipped: list[str]) -> AnswerResponseFile | None:
    q = source.run.user(user_id).question(question_id)
    try:
        record = source.reader.maybe(q.answer_response, AnswerResponseFile)
        ok = record is not None and record.response is not None and record.response.success and \
            record.failure is None and record.answer_fingerprint == fingerprint
        if ok:
            source.reader.read(q.job, JobFile)
    except DamagedFile as exc:
        skipped.append(f"{exc}: the question is answered again")
        return None
    return record if ok else None


def _trajectory(source: EarlierRun, target: RunDir, user_id: int, answer: AnswerResponseFile) -> None:
    """The answer agent's state, when it has one: a regular file of the earlier workspace."""
    relative = answer.response.trajectory_path if answer.response else None
    if not relative:
        return
    if PurePosixPath(relative).is_absolute() or ".." in PurePosixPath(relative).parts:
        raise DamagedFile(source.run.user(user_id).question(answer.question_id).answer_response,
                          f"its trajectory_path {relative!r} is not a path inside the workspace")
    mine = target.user(user_id).workspace / relative
    if not os.path.lexists(mine):  # else it is the memory's own, copied and checked with it
        copy_file(source.reader, source.run.user(user_id).workspace / relative, mine, link=True)


def copy_answer(source: EarlierRun, target: RunDir, user_id: int, question_id: str) -> None:
    """job.json, answer-response.json and the agent's state; DamagedFile (nothing of the answer
    left in this run) when one cannot be copied."""
    theirs, mine = source.run.user(user_id).question(question_id), target.user(user_id).question(question_id)
    try:
        copy_record(source.reader, theirs.job, mine.job, JobFile)
        answer = copy_record(source.reader, theirs.answer_response, mine.answer_response, AnswerResponseFile)
        _trajectory(source, target, user_id, answer)
    except DamagedFile:
        for path in (mine.job, mine.answer_response):
            path.unlink(missing_ok=True)
        raise


def find_judgment(source: EarlierRun, user_id: int, question_id: str, fingerprint: str, skipped: list[str]) -> bool:
    q = source.run.user(user_id).question(question_id)
    try:
        record = source.reader.maybe(q.judgment, JudgmentFile)
        if record is None or not (record.success and record.judgment_fingerprint == fingerprint):
            return False
        source.reader.maybe(q.attribution, AttributionFile)  # runs before evidence attribution have none
        return source.reader.maybe(q.metrics, MetricsFile) is not None
    except DamagedFile as exc:
        skipped.append(f"{exc}: the answer is judged again")
        return False


def copy_judgment(source: EarlierRun, target: RunDir, user_id: int, question_id: str) -> None:
    """judgment.json, metrics.json and attribution.json when there is one; DamagedFile (nothing of
    the judgment left in this run) when one cannot be copied."""
    theirs, mine = source.run.user(user_id).question(question_id), target.user(user_id).question(question_id)
    files = [(theirs.judgment, mine.judgment, JudgmentFile), (theirs.metrics, mine.metrics, MetricsFile),
             (theirs.attribution, mine.attribution, AttributionFile)]
    try:
        for source_path, target_path, model in files:
            if model is not AttributionFile or os.path.lexists(source_path):
                copy_record(source.reader, source_path, target_path, model)
    except DamagedFile:
        for _, target_path, _ in files:
            target_path.unlink(missing_ok=True)
        raise
