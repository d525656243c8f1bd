"""Preflight rules that span records (DESIGN §3): what no single record's model can see.

- Session ids and question ids are unique across the whole dataset, ignoring case. The judge's
  questions (`Dataset.judge_questions`) are keyed by question id alone, the run's folders and
  ReMe's workspace files are named after the ids, and on a case-insensitive file system `1_a`
  and `1_A` are one file.
- A text turn holds at most `MAX_TURN_TEXT_CHARS` characters: a longer one is a broken record,
  not a conversation, and would only fail at the model. (Checked here, not in the record's model,
  so that its session's images are still checked.)
- Turn numbers are unique within a session: the candidate's message id is `<session_id>-t<turn>`
  (`mobilemem.message_ids`, as `mobilemem.reme.ingest` sends it), and ReMe keeps one message per id.
- An image turn's message id fits in the name of the file ReMe saves the image as:
  `msg-<hex of the message id>-image-1<ext>` (ReMe's auto_memory), at most 255 bytes.
- A session holds no more images than the candidate's `max_images`: ReMe's auto_memory refuses
  the whole session otherwise.
- A text turn's content can be encoded as UTF-8 (`mobilemem.dataset_text`), checked here like
  its length.
- Evidence names only sessions its user has (`session_id`): attribution looks for them among the
  user's sessions. Checked only for a user whose session ids are all valid and unique (an invalid
  or repeated id is a problem of its own, and which id was meant is unknown).

Each problem is one line naming the file, line, user, session or question, like the others.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mobilemem.dataset_records import JsonLine, SessionRecord, id_problem, item_label
from mobilemem.dataset_text import text_problem
from mobilemem.images import quoted
from mobilemem.message_ids import message_id

MAX_TURN_TEXT_CHARS = 200_000
MAX_FILE_NAME_BYTES = 255
# ReMe's attachment name is f"msg-{message_id.encode().hex()}-image-{block}{ext}": block 1 (the image
# follows its "Image ID:" text block), ext at most ".webp"; ids are ASCII, 2 hex digits a character.
MAX_MESSAGE_ID_CHARS = (MAX_FILE_NAME_BYTES - len("msg--image-1.webp")) // 2


def check_unique_ids(user_lines: Iterable[JsonLine], question_lines: Iterable[JsonLine], problems: list[str]) -> None:
    """Every session id and question id used a second time anywhere in the dataset, one problem each
    naming where it first appeared. Ids are read from the raw lines, so that a duplicate is found
    even when the rest of its record is invalid."""
    _check_unique(user_lines, "sessions", "session_id", "session", problems)
    _check_unique(question_lines, "questions", "question_id", "question", problems)


def _items(raw: Any, key: str) -> list[Any]:
    """`raw[key]` when `raw` is an object and that is a list, else []."""
    items = raw.get(key) if isinstance(raw, dict) else None
    return items if isinstance(items, list) else []


def _check_unique(lines: Iterable[JsonLine], list_key: str, id_key: str, kind: str, problems: list[str]) -> None:
    first: dict[str, tuple[str, str]] = {}  # casefolded id -> (the id, where it first appeared)
    for line in lines:
        for i, item in enumerate(_items(line.raw, list_key)):
            value = item.get(id_key) if isinstance(item, dict) else None
            if not isinstance(value, str) or id_problem(value):
                continue  # a missing or invalid id is a problem of its own
            here = f"{line.where} user {line.uuid}"
            key = value.casefold()
            if key not in first:
                first[key] = (value, f"{here}, {list_key}[{i}]")
                continue
            seen, at = first[key]
            case = "" if seen == value else (f", as {seen!r}: ids that differ only in case name the same file "
                                             "on a case-insensitive file system")
            problems.append(f"{here} {kind} {value}: {kind} id {value!r} repeats (first at {at}){case}")


def check_sessions(line: JsonLine, sessions: Sequence[SessionRecord], problems: list[str], *,
                   max_images: int | None = None) -> None:
    """Text turns that are too long, repeated turn numbers, image turns whose ReMe file name would
    be too long, and (when `max_images` is given) sessions holding more images than the candidate
    accepts."""
    user = f"{line.where} user {line.uuid}"
    for session in sessions:
        where = f"{user} session {session.session_id}"
        first: dict[int, int] = {}
        images = 0
        for j, turn in enumerate(session.dialogue):
            if turn.turn in first:
                problems.append(f"{where} turn {turn.turn}: turn number repeats (first at dialogue[{first[turn.turn]}])"
                                ": the candidate's message id <session_id>-t<turn> would name both")
            first.setdefault(turn.turn, j)
            if turn.content_type == "text" and len(turn.content or "") > MAX_TURN_TEXT_CHARS:
                problems.append(f"{where} turn {turn.turn}: content is {len(turn.content or ''):,} characters, "
                                f"more than the {MAX_TURN_TEXT_CHARS:,} of {__name__}.MAX_TURN_TEXT_CHARS")
            if turn.content_type == "text" and (problem := text_problem(turn.content or "")):
                problems.append(f"{where} turn {turn.turn}: content {problem}")
            if turn.content_type != "image":
                continue
            images += 1
            length = len(message_id(session.session_id, turn.turn))
            if length > MAX_MESSAGE_ID_CHARS:
                problems.append(f"{where} turn {turn.turn}: message id <session_id>-t<turn> is {length} "
                                f"characters, more than the {MAX_MESSAGE_ID_CHARS} that fit in the name of the file "
                                f"ReMe saves the image as (msg-<hex of the id>-image-1.<ext>, {MAX_FILE_NAME_BYTES} "
                                "bytes at most)")
        if max_images is not None and images > max_images:
            problems.append(f"{where}: has {images} images, more than the candidate's max_images ({max_images}): "
                            "ReMe's auto_memory would refuse the session")


def check_evidence_sessions(user_lines: Mapping[int, JsonLine], question_lines: Iterable[JsonLine],
                            problems: list[str]) -> None:
    """Every evidence item whose `session_id` names a session its user does not have, one problem
    each. Read from the raw lines, so that it is found even when the rest of the record is invalid."""
    users = {uid: _session_ids(line) for uid, line in user_lines.items()}
    counts = Counter(sid.casefold() for ids in users.values() for sid in ids or ())
    for line in question_lines:
        sessions = users.get(line.uuid) if line.uuid is not None else None
        if sessions is None or any(counts[sid.casefold()] > 1 for sid in sessions):
            continue  # no such user, or session ids that are a problem of their own (what was meant is unknown)
        questions = _items(line.raw, "questions")
        for i, question in enumerate(questions):
            for j, item in enumerate(_items(question, "evidence")):
                named = item.get("session_id") if isinstance(item, dict) else None
                if not isinstance(named, str) or not named or named in sessions or text_problem(named):
                    continue  # no session named, or a text problem the record's model reports
                problems.append(f"{line.where} user {line.uuid} question {item_label(questions, i, 'question_id', str)}"
                                f": questions[{i}].evidence[{j}].session_id: names session {quoted(named)}, which "
                                f"user {line.uuid} does not have in data.jsonl")


def _session_ids(line: JsonLine) -> list[str] | None:
    """The user's session ids, or None when its sessions are no list or one of their ids is invalid."""
    sessions = line.raw.get("sessions") if isinstance(line.raw, dict) else None
    if not isinstance(sessions, list):
        return None
    ids = [s.get("session_id") if isinstance(s, dict) else None for s in sessions]
    return ids if all(isinstance(i, str) and not id_problem(i) for i in ids) else None
