"""The heartbeat of an open run: run.json's `heartbeat_at`, rewritten every HEARTBEAT_S while the run
is alive; `summarize` calls a `running` run whose heartbeat is older than STALE_AFTER_S not alive."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from mobilemem.records import RunFile
from mobilemem.rundir import RunDir, read_record, write_record

HEARTBEAT_S = 30.0
STALE_AFTER_S = 3 * HEARTBEAT_S + 30
log = logging.getLogger(__name__)


async def beat(run: RunDir) -> None:
    """Until cancelled: run.json's `heartbeat_at`, every HEARTBEAT_S."""
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        try:
            manifest = read_record(run.run, RunFile)
            write_record(run.run, manifest.model_copy(update={"heartbeat_at": datetime.now(UTC)}))
        except OSError as exc:
            log.warning("heartbeat not written: %s", exc.strerror or exc)
