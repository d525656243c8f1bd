"""What the Prefect dashboard shows of a run: live progress tables, the progress lines in the flow
runs' logs, and one artifact per task run linking the run-directory files it wrote.

Everything here is bookkeeping: best effort, off the evaluation's critical path, never a reason
for a step to fail or wait. Counters change in the tasks (no I/O); one publisher thread per run
pushes the changed tables and the task artifacts every PUBLISH_EVERY_S. Every key and description carries the run's
identity (model and parent flow-run id), so parallel evaluations never overwrite each other.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import queue
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from uuid import UUID

from prefect.artifacts import acreate_table_artifact
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.actions import ArtifactCreate, ArtifactUpdate
from prefect.context import FlowRunContext, TaskRunContext
from prefect.logging.handlers import APILogHandler

from mobilemem.records import RunFile

console = logging.getLogger("mobilemem.progress")
log = logging.getLogger(__name__)
PUBLISH_EVERY_S = 3.0  # each table update is one database write on the Prefect server
IndexStatus = Literal["waiting", "building", "built", "reused", "failed", "skipped", "not run"]


@dataclass(frozen=True)
class RunIdentity:
    model: str
    run_id: str  # the parent flow run's id

    @classmethod
    def of(cls, manifest: RunFile) -> RunIdentity:
        return cls(model=manifest.config.model, run_id=manifest.flow_run_id or "no-flow-run")

    def key(self, name: str) -> str:
        """An artifact key (Prefect allows lowercase letters, digits and dashes)."""
        slug = re.sub(r"[^a-z0-9]+", "-", f"mobilemem-{self.model}-{self.run_id[:8]}-{name}".lower())
        return slug.strip("-")

    def describe(self, what: str) -> str:
        return f"{what} ({self.model}, run {self.run_id})"


@dataclass
class UserProgress:
    user_id: int
    sessions: int
    questions: int
    ingested: int = 0
    failed_sessions: int = 0
    index: IndexStatus = "waiting"
    answered: int = 0
    judged: int = 0
    gaps: int = 0
    started: bool = False  # its subflow holds a user slot (until then: queued)
    finished: bool = False
    version: int = 0  # bumped on every change; the publisher compares it
    log_to: dict[str, str] = field(default_factory=dict)  # the flow run whose log gets the lines

    def line(self) -> str:
        failed = f" ({self.failed_sessions} failed)" if self.failed_sessions else ""
        done = " - finished" if self.finished else ""
        return (f"user {self.user_id}: sessions {self.ingested}/{self.sessions}{failed}, index {self.index}, "
                f"answered {self.answered}/{self.questions}, judged {self.judged}/{self.questions}, "
                f"gaps {self.gaps}{done}")

    def row(self) -> dict[str, object]:
        return {"user": self.user_id, "sessions ingested": f"{self.ingested}/{self.sessions}",
                "sessions failed": self.failed_sessions, "index": self.index,
                "answered": f"{self.answered}/{self.questions}", "judged": f"{self.judged}/{self.questions}",
                "gaps": self.gaps, "status": self.status, "line": self.line()}

    @property
    def status(self) -> str:
        return "finished" if self.finished else "running" if self.started else "queued"

    def _changed(self) -> None:
        self.version += 1
        console.info(self.line(), extra=self.log_to)  # stderr, run.log and (APILogHandler) the run's log

    def bump(self, **counts: int) -> None:
        for name, value in counts.items():
            setattr(self, name, getattr(self, name) + value)
        self._changed()

    def update(self, **values: object) -> None:
        """Take a user run's counters (`--workers`: its progress.json); a line only when one changed."""
        changed = {name: value for name, value in values.items() if getattr(self, name) != value}
        for name, value in changed.items():
            setattr(self, name, value)
        if changed:
            self._changed()

    def set_index(self, status: IndexStatus) -> None:
        self.index = status
        self._changed()

    def start(self) -> None:
        self.started = True
        self._changed()

    def finish(self) -> None:
        self.finished = True
        self._changed()


@dataclass(frozen=True)
class _NewTable:
    """A user's table, for the publisher to create on the user's subflow run."""

    name: str
    what: str
    flow_run_id: UUID | None


@dataclass
class Dashboard:
    """The run's artifacts. Tables are created in the flow that owns them; every later write (table
    updates, task artifacts) is made by one publisher thread with its own client. Off the event loop,
    it costs the evaluation nothing, and a signal (which Python delivers to the main thread only)
    never interrupts it: the interrupt always reaches the flow."""

    identity: RunIdentity
    progress: dict[int, UserProgress]
    task_artifacts: bool = False  # config dashboard.task_artifacts
    _tables: dict[str, tuple[UUID, int]] = field(default_factory=dict)  # key → (artifact id, version shown)
    _queue: queue.SimpleQueue[ArtifactCreate | _NewTable] = field(default_factory=queue.SimpleQueue)
    _stop: threading.Event = field(default_factory=threading.Event)
    _publisher: threading.Thread | None = None
    _api_log: logging.Handler | None = None

    async def open_run(self, all_users: bool = True) -> None:
        """In the parent flow: the all-users table, the publisher, and the progress lines into its log
        (the log `prefect deployment run --watch` follows), whichever subflow's task changed them. A
        user's deployment run (`--workers`) opens it for its own user, without the all-users table."""
        self._api_log = APILogHandler()
        console.addHandler(self._api_log)
        if TaskRunContext.get() is None and (run := FlowRunContext.get()) is not None:
            for progress in self.progress.values():
                progress.log_to = {"flow_run_id": str(run.flow_run.id)}
        if all_users:
            await self._create_table("users", self._all_rows(), self._version(), "progress of every user")
        # the thread sees this run's Prefect settings (an embedded server's address lives in a context)
        self._publisher = threading.Thread(target=contextvars.copy_context().run, args=(self._publish_until_stopped,),
                                           name="mobilemem-dashboard", daemon=True)
        self._publisher.start()

    def open_user(self, user_id: int) -> None:
        """In the user's subflow (the table belongs to it): created by the publisher, so that no API
        call waits inside the user's slot."""
        progress, run = self.progress[user_id], FlowRunContext.get()
        self._queue.put(_NewTable(f"user-{user_id}", f"progress of user {user_id}",
                                  run.flow_run.id if run is not None else None))
        progress.start()

    def task_files(self, title: str, paths: list[Path]) -> None:
        """A markdown artifact on the current task run listing the files it wrote (sent by the publisher)."""
        context = TaskRunContext.get()
        if context is None or not self.task_artifacts:
            return
        lines = "\n".join(f"- [`{p.name}`]({p.resolve().as_uri()}) `{p}`" for p in paths if p.exists())
        self._queue.put(ArtifactCreate(
            type="markdown", data=f"### {title}\n\n{lines or 'no file was written'}\n",
            description=self.identity.describe(title), task_run_id=context.task_run.id,
            flow_run_id=context.task_run.flow_run_id))

    async def close(self) -> None:
        """The final tables and every queued task artifact, then stop; nothing here raises."""
        if self._publisher is not None:
            self._stop.set()
            await asyncio.to_thread(self._publisher.join, 60)
        if self._api_log is not None:
            console.removeHandler(self._api_log)
            try:
                await APILogHandler.aflush()
            except Exception as exc:
                log.debug("progress lines not flushed: %s", type(exc).__name__)

    def _all_rows(self) -> list[dict[str, object]]:
        return [p.row() for p in self.progress.values()]

    def _version(self) -> int:
        return sum(p.version for p in self.progress.values())

    async def _create_table(self, name: str, rows: list[dict[str, object]], version: int, what: str) -> None:
        key = self.identity.key(name)
        try:
            artifact_id = await acreate_table_artifact(table=rows, key=key, description=self.identity.describe(what))
        except Exception as exc:  # the API may be unreachable; the evaluation goes on
            log.debug("artifact %s not created: %s", key, type(exc).__name__)
            return
        self._tables[key] = (artifact_id, version)

    def _publish_until_stopped(self) -> None:
        with get_client(sync_client=True) as client:
            while not self._stop.wait(PUBLISH_EVERY_S):
                self._publish(client)
            self._publish(client)  # the final state

    def _publish(self, client: SyncPrefectClient) -> None:
        try:
            while True:
                item = self._queue.get_nowait()
                if isinstance(item, _NewTable):
                    self._create_user_table(client, item)
                else:
                    client.create_artifact(item)
        except queue.Empty:
            pass
        except Exception as exc:  # the API may be gone; the rest of this round is dropped
            log.debug("task artifact not created: %s", type(exc).__name__)
        wanted = {self.identity.key("users"): (self._version(), self._all_rows())}
        wanted |= {self.identity.key(f"user-{u}"): (p.version, [p.row()]) for u, p in self.progress.items()}
        for key, (version, rows) in wanted.items():
            if key in self._tables and self._tables[key][1] != version:
                artifact_id = self._tables[key][0]
                try:
                    client.update_artifact(artifact_id, ArtifactUpdate(data=json.dumps(rows)))
                except Exception as exc:
                    log.debug("progress table %s not updated: %s", key, type(exc).__name__)
                    return
                self._tables[key] = (artifact_id, version)

    def _create_user_table(self, client: SyncPrefectClient, table: _NewTable) -> None:
        """Shown as its current version: the next round updates it only after a change."""
        key, user_id = self.identity.key(table.name), int(table.name.removeprefix("user-"))
        progress = self.progress[user_id]
        version, rows = progress.version, [progress.row()]
        try:
            artifact = client.create_artifact(ArtifactCreate(
                type="table", key=key, data=json.dumps(rows), description=self.identity.describe(table.what),
                flow_run_id=table.flow_run_id))
        except Exception as exc:  # the API may be unreachable; the evaluation goes on
            log.debug("artifact %s not created: %s", key, type(exc).__name__)
            return
        self._tables[key] = (artifact.id, version)

