"""The run stops starting new work when its disk is full (DESIGN §8, "nothing finished is lost").

A `DiskGuard` is shared by every step of one run. It trips when a write of the run failed with
ENOSPC/EDQUOT (ReMe's own writes fail inside its jobs, where the runner only sees a failed job: after
a failed step a small probe write tells), or when the run directory's filesystem has less than
`min_free_bytes` left (one `statvfs` before each step). Once tripped it stays tripped: the run finishes what is in flight, starts
nothing new, and ends as `interrupted_by_error`.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
from pathlib import Path

log = logging.getLogger(__name__)
FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
PROBE, PROBE_BYTES = ".disk-probe", 64 * 1024


class DiskGuard:
    def __init__(self, root: Path, min_free_bytes: int) -> None:
        self.root = root
        self.min_free_bytes = min_free_bytes
        self.reason: str | None = None

    def note(self, exc: OSError) -> None:
        """A write of the run failed: a full disk stops the run."""
        if exc.errno in FULL and self.reason is None:
            self.reason = f"the disk of {self.root} is full ({exc.strerror})"
            log.error("%s: starting no new work", self.reason)

    def probe(self) -> None:
        """After a step failed for a reason the runner cannot see (ReMe's own writes fail inside its
        jobs): try to write a little; a full disk then stops the run like any write of ours."""
        if self.reason is not None:
            return
        probe = self.root / PROBE
        try:
            with probe.open("wb") as handle:
                handle.write(b"\0" * PROBE_BYTES)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            self.note(exc)
        finally:
            probe.unlink(missing_ok=True)

    def stopped(self) -> bool:
        if self.reason is None:
            try:
                free = shutil.disk_usage(self.root).free
            except OSError:
                return False
            if free < self.min_free_bytes:
                self.reason = f"the disk of {self.root} has {free // 2**20} MiB left (below {self.min_free_bytes // 2**20} MiB)"
                log.error("%s: starting no new work", self.reason)
        return self.reason is not None
