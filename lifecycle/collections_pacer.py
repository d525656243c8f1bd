"""Full garbage collections paced by the image bytes ingested.

A session's agent and httpx's response/stream pairs are reference cycles holding the session's
images (base64 in the request body, ReMe's copies of the messages); only a full collection frees
them (bench/README.md, peak RSS). One after every session cost 8 % of the runner's Python time at
latency 0 (bench/cpu_profile.py), so the ingest task reports each session's image bytes here and a
collection runs once `every_bytes` have been ingested since the last one, across all users of
the process: the garbage it can hold stays bounded by the images, not by the number of sessions.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

COLLECT_EVERY_BYTES = 32 * 2**20


@dataclass
class CollectionPacer:
    every_bytes: int = COLLECT_EVERY_BYTES
    _since: int = 0

    def ingested(self, image_bytes: int) -> bool:
        """Count a session's image bytes; collect (and say so) once the budget is reached."""
        self._since += image_bytes
        if self._since < self.every_bytes:
            return False
        self._since = 0
        gc.collect()
        return True
