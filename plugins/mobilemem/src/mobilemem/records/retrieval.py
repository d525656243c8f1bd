"""What the `bm25-rag` baseline indexed and retrieved (DESIGN §10): its transcript chunks
(workspace/bm25-rag/chunks.jsonl) and, in answer-response.json, what one question retrieved and sent."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mobilemem.records.base import RecordBase


class ChunkImage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    turn: int
    image_id: str = Field(description="the turn's original Image ID (its dialogue path)")
    path: str = Field(description="the resolved file, dataset-relative")


class TranscriptChunkLine(RecordBase):
    """One indexed chunk: consecutive turns of one session, as the text the index and the model see."""

    chunk_id: int
    session_id: str
    time: str = Field(description="the session's event_start_time, verbatim")
    first_turn: int
    last_turn: int
    text: str
    images: list[ChunkImage] = Field(default_factory=list)


class RetrievedChunk(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    chunk_id: int
    session_id: str
    first_turn: int
    last_turn: int
    score: float


class SentImage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    session_id: str
    turn: int
    image_id: str
    time: str


class Retrieval(BaseModel):
    """A baseline's retrieval for one question: the chunks in rank order and the images sent."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    query: str
    k: int
    chunks: list[RetrievedChunk]
    images: list[SentImage]
    images_left_out: int = Field(default=0, description="referenced by the chunks, over the preset's image cap")
