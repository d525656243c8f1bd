"""How a run that did not end normally is closed: after an interrupt or a failed orchestration,
run.json says so (unless the work was done) and summary.json covers what completed."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from mobilemem.records import RunFile, RunState
from mobilemem.rundir import RunDir, read_record, write_record
from lifecycle.summary_files import write_summary

log = logging.getLogger(__name__)


def mark_stopped(run: RunDir) -> RunState:
    """After the orchestration failed: run.json says so unless the work was done, and summary.json
    covers what completed (when the disk lets it). Returns the run's final state."""
    manifest = read_record(run.run, RunFile)
    state: RunState = manifest.state if manifest.state != "running" else "interrupted_by_error"
    try:
        if manifest.state == "running":
            write_record(run.run, manifest.model_copy(update={"state": state, "finished_at": datetime.now(UTC)}))
        write_summary(run.root)
    except OSError as exc:
        log.error("could not record the stop in run.json / summary.json: %s", exc.strerror or exc)
    return state


def mark_interrupted(run: RunDir) -> None:
    """After an interrupt: run.json says so (if the flow could not), and summary.json covers what
    completed. Interrupted before run.json existed, the run leaves no folder behind."""
    if not run.is_run():
        run.abandon()
        return
    manifest = read_record(run.run, RunFile)
    if manifest.state == "running":
        write_record(run.run, manifest.model_copy(update={"state": "interrupted", "finished_at": datetime.now(UTC)}))
    write_summary(run.root)
