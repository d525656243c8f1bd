"""Evidence attribution (issue 15): what the answer agent did with a scored question's evidence.

Two facts per question, from the answer's recorded tool calls:

- *opened an evidence image*: a successful `read_image` call opened a saved dialogue image that is
  one of the evidence images. The saved file's name gives the message id, hence the session and
  turn (`mobilemem.message_ids`), hence the turn's original Image ID; it is an evidence image when
  its basename equals the basename of an evidence `image_path` (the dataset resolves every image
  reference by user and basename, so folder aliases do not matter).
- *retrieved an evidence session*: a hit of a successful `bm25_search` points into an evidence
  session when its path is `session/dialog/<sid>.jsonl` (rule `dialog`), or is a note that session
  wrote (`notes_written` of its sessions/<sid>.json; rule `note`), or its text cites
  `session/images/<sid>/` (rule `image`, e.g. a daily index line listing the session's images).

A baseline has no tools: for `bm25-rag` its recorded retrieval stands in for them (an image *sent*
to the model counts as opened, a retrieved chunk of an evidence session as a hit, rule `dialog`;
`call` is then the rank in the retrieval); `no-memory` retrieves and sends nothing.

Pure: no I/O. It sees evidence, like the judge; nothing here reaches the candidate.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence

from mobilemem.dataset import CandidateSession, JudgeQuestion
from mobilemem.images import ImageProblem, reference_basename
from mobilemem.message_ids import attachment_turn
from mobilemem.records import AttributionFile, EvidenceHit, HitRule, ImageRead, Label, Retrieval, ToolCallRecord

# ReMe's search result: `========== <path>:<start>-<end> [score=...] ==========` before each hit's text
_HIT = re.compile(r"^=+ (?P<path>\S.*?):(?P<lines>\d*-\d*) \[[^\]\n]*\] =+$", re.MULTILINE)
_CITED_IMAGES = re.compile(r"session/images/([^/\s\[\]'\"|]+)/")
_SHOWN = re.compile(r"^Image (?P<path>.+):$")  # the text block of a successful read_image


def _basename(reference: str) -> str | None:
    try:
        return reference_basename(reference)
    except ImageProblem:
        return None


def _unique(values) -> list[str]:
    return list(dict.fromkeys(v for v in values if isinstance(v, str) and v))


def _image_read(index: int, call: ToolCallRecord, image_ids: Mapping[tuple[str, int], str],
                wanted: set[str]) -> ImageRead:
    shown = _SHOWN.match((call.result or "").split("\n", 1)[0])
    argument = (call.arguments or {}).get("path")
    path = shown["path"] if shown else str(argument or "")
    turn = attachment_turn(path)
    image_id = image_ids.get(turn) if turn else None
    return ImageRead(call=index, path=path, session_id=turn[0] if turn else None, turn=turn[1] if turn else None,
                     image_id=image_id, evidence=image_id is not None and _basename(image_id) in wanted)


def _hits(index: int, result: str, evidence: list[str], writers: Mapping[str, set[str]]) -> list[EvidenceHit]:
    headers = list(_HIT.finditer(result))
    hits = []
    for k, header in enumerate(headers):
        text = result[header.end():headers[k + 1].start() if k + 1 < len(headers) else len(result)]
        path, cited = header["path"], set(_CITED_IMAGES.findall(text))
        rules: dict[str, list[HitRule]] = defaultdict(list)
        for sid in evidence:
            if path == f"session/dialog/{sid}.jsonl":
                rules[sid].append("dialog")
            if sid in writers.get(path, ()):
                rules[sid].append("note")
            if sid in cited:
                rules[sid].append("image")
        if rules:
            hits.append(EvidenceHit(call=index, path=path, lines=header["lines"], sessions=list(rules),
                                    rules=sorted({r for found in rules.values() for r in found})))
    return hits


def _retrieved(retrieval: Retrieval, evidence: list[str], wanted: set[str]) -> tuple[list[ImageRead], list[EvidenceHit]]:
    reads = [ImageRead(call=rank, path=image.image_id, session_id=image.session_id, turn=image.turn,
                       image_id=image.image_id, evidence=_basename(image.image_id) in wanted)
             for rank, image in enumerate(retrieval.images)]
    hits = [EvidenceHit(call=rank, path=f"chunk {chunk.chunk_id}", lines=f"{chunk.first_turn}-{chunk.last_turn}",
                        sessions=[chunk.session_id], rules=["dialog"])
            for rank, chunk in enumerate(retrieval.chunks) if chunk.session_id in evidence]
    return reads, hits


def attribute(question: JudgeQuestion, tool_calls: Sequence[ToolCallRecord], sessions: Sequence[CandidateSession],
              notes_written: Mapping[str, Sequence[str]], label: Label,
              retrieval: Retrieval | None = None) -> AttributionFile:
    """The question's attribution record; `notes_written` maps a session id to the notes it wrote;
    `retrieval` is a baseline's (then there are no tool calls)."""
    evidence_sessions = _unique(item.get("session_id") for item in question.evidence)
    evidence_images = _unique(item.get("image_path") for item in question.evidence)
    wanted = {name for name in map(_basename, evidence_images) if name}
    image_ids = {(s.session_id, t.turn): t.image.image_id for s in sessions for t in s.turns if t.image}
    writers: dict[str, set[str]] = defaultdict(set)
    for session_id, notes in notes_written.items():
        for note in notes:
            writers[note].add(session_id)
    reads = [_image_read(i, call, image_ids, wanted) for i, call in enumerate(tool_calls)
             if call.name == "read_image" and call.ok]
    hits = [hit for i, call in enumerate(tool_calls) if call.name == "bm25_search" and call.ok and call.result
            for hit in _hits(i, call.result, evidence_sessions, writers)]
    if retrieval is not None:
        reads, hits = _retrieved(retrieval, evidence_sessions, wanted)
    return AttributionFile(
        user_id=question.user_id, question_id=question.question_id, evidence_sessions=evidence_sessions,
        evidence_images=evidence_images, images_read=reads, evidence_hits=hits,
        opened_evidence_image=any(r.evidence for r in reads), retrieved_evidence_session=bool(hits), label=label)
