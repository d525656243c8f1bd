"""What this plug-in writes (its part of the run directory): the history it keeps in the user's
workspace, and the account of one answer's prompt (answer-response.json's `response.details`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mobilemem.dataset import CandidateSession

FOLDER = "long-context"  # under users/<uid>/workspace/


class HistoryLine(BaseModel):
    """One line of workspace/long-context/history.jsonl: a session as it was ingested."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    session: CandidateSession


class FirstSent(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    session_id: str
    turn: int


class HistoryWindow(BaseModel):
    """What of the user's history one question's prompt carried, and what was cut (oldest first)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    budget_tokens: int = Field(description="context_size - max_tokens - the template with the question")
    estimated_tokens: int = Field(description="AgentScope's estimate of the whole prompt that was sent")
    image_limit: int = Field(description="the preset's max_images")
    sessions: int
    sessions_sent: int = Field(description="sessions with at least one turn sent")
    turns: int
    turns_sent: int
    images: int
    images_sent: int
    cut_by: Literal["context", "images"] | None = Field(description="the limit the first cut turn would pass")
    first_sent: FirstSent | None = Field(description="the oldest turn sent; null when nothing fitted")
