"""Per-user progress: a Prefect progress artifact and a compact console line per change."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from prefect.artifacts import acreate_progress_artifact, aupdate_progress_artifact

console = logging.getLogger("mobilemem.progress")
PUBLISH_EVERY_S = 2.0  # each artifact update is a database write on the Prefect server


@dataclass
class UserProgress:
    user_id: int
    sessions: int
    questions: int
    ingested: int = 0
    answered: int = 0
    judged: int = 0
    gaps: int = 0
    artifact_id: object = field(default=None, repr=False)
    _published_at: float = field(default=0.0, repr=False)

    @property
    def fraction(self) -> float:
        total = self.sessions + 2 * self.questions
        return 100.0 * (self.ingested + self.answered + self.judged + self.gaps) / total if total else 100.0

    def line(self) -> str:
        return (f"user {self.user_id}: sessions {self.ingested}/{self.sessions}, answered {self.answered}/"
                f"{self.questions}, judged {self.judged}/{self.questions}, gaps {self.gaps}")

    async def start(self) -> None:
        try:
            self.artifact_id = await acreate_progress_artifact(
                progress=self.fraction, key=f"user-{self.user_id}-progress",
                description=f"user {self.user_id}: {self.sessions} sessions, {self.questions} questions")
        except Exception as exc:
            console.debug("progress artifact not created: %s", type(exc).__name__)
        console.info(self.line())

    async def bump(self, **counts: int) -> None:
        for name, value in counts.items():
            setattr(self, name, getattr(self, name) + value)
        console.info(self.line())
        await self._publish(min(99.0, self.fraction))

    async def finish(self) -> None:
        await self._publish(100.0)

    async def _publish(self, value: float) -> None:
        """Best effort and throttled: the dashboard's view must never fail, stop or slow the evaluation."""
        now = time.monotonic()
        if value < 100.0 and now - self._published_at < PUBLISH_EVERY_S:
            return
        self._published_at = now
        if self.artifact_id is not None:
            try:
                await aupdate_progress_artifact(self.artifact_id, value)
            except Exception as exc:  # the API may be gone while a run is being interrupted
                console.debug("progress artifact not updated: %s", type(exc).__name__)
