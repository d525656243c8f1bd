"""Raw shapes of the release's JSONL files and the line reader that reports every problem.

Only `mobilemem.dataset` uses these. Fields the runner never uses (profiles, summaries, memory
points, statistics) are not modelled and so cannot reach any view. Rules that span records (ids
unique across the dataset, turn numbers, ReMe's file names) are in `mobilemem.dataset_checks`.
Every modelled text field is encodable as UTF-8 (`mobilemem.dataset_text`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from mobilemem.dataset_text import encodable

MAX_PROBLEMS_PER_LINE = 20
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")  # always fullmatch: `$` admits a final newline
# ReMe's `validate_filename_component` (reme/steps/file_io/_path.py) also refuses these names
_DEVICE_NAMES = frozenset({"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                           *(f"LPT{i}" for i in range(1, 10))})
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
MAX_USER_ID = 2**63 - 1  # a user id names a folder of the run
MAX_QUESTION_CHARS = 200_000  # like a turn's text (`dataset_checks.MAX_TURN_TEXT_CHARS`)


def id_problem(value: str) -> str | None:
    """Why `value` cannot be a session or question id, or None. Ids become file names (the run's
    folders, ReMe's `dialog/<session_id>.jsonl` and `images/<session_id>/`): this rule is stricter
    than ReMe's own, so that ReMe never refuses one mid-run."""
    if not _SAFE_ID.fullmatch(value):
        return "must be 1-128 letters, digits, '_', '.' or '-', the first a letter or digit (it becomes a file name)"
    if value.endswith("."):
        return "must not end with '.' (it becomes a file name)"
    if value.split(".", 1)[0].upper() in _DEVICE_NAMES:
        return "is a Windows device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9; it becomes a file name)"
    return None


def _safe_id(value: str) -> str:
    if problem := id_problem(value):
        raise ValueError(problem)
    return value


def _at_most(limit: int, name: str):
    def check(value: str | None) -> str | None:
        if value is not None and len(value) > limit:
            raise ValueError(f"is {len(value):,} characters, more than the {limit:,} of {name}")
        return value
    return AfterValidator(check)


def _has_turns(value: list[Any]) -> list[Any]:
    if not value:
        raise ValueError("is empty: a session needs at least one turn")
    return value


def _has_text(value: str) -> str:
    if not value.strip():
        raise ValueError("has no text (only whitespace): ReMe's answer job refuses an empty query")
    return value


def _dataset_time(value: str) -> str:
    try:
        datetime.strptime(value, TIME_FORMAT)
    except ValueError:  # its message repeats the whole value, which may be megabytes
        raise ValueError(f"must be a time written {TIME_FORMAT}") from None
    return value


def _answer(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list):
        return [str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for v in value]
    return value


Text = Annotated[str, AfterValidator(encodable)]
SafeId = Annotated[Text, AfterValidator(_safe_id)]
DatasetTime = Annotated[Text, AfterValidator(_dataset_time)]
Language = Literal["en", "Chinese"]


class _Raw(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


class TurnRecord(_Raw):
    turn: int = Field(ge=1)
    role: Literal["user", "assistant"]
    content_type: Literal["text", "image"]
    content: str | None = None  # at most `dataset_checks.MAX_TURN_TEXT_CHARS`, checked there
    image_inline: str | None = None

    @model_validator(mode="after")
    def _has_payload(self) -> TurnRecord:
        if self.content_type == "text" and self.content is None:
            raise ValueError("a text turn needs `content`")
        if self.content_type == "image" and not self.image_inline:
            raise ValueError("an image turn needs `image_inline`")
        return self


class SessionRecord(_Raw):
    session_id: SafeId
    event_start_time: DatasetTime
    event_end_time: DatasetTime
    dialogue: Annotated[list[TurnRecord], AfterValidator(_has_turns)]

    @property
    def start(self) -> datetime:
        return datetime.strptime(self.event_start_time, TIME_FORMAT)


class UserRecord(_Raw):
    """A user line; its sessions are validated one by one (`validate_sessions`) so that one bad
    session does not hide the problems of the others."""

    uuid: int = Field(ge=0, le=MAX_USER_ID)
    language: Language
    sessions: list[Any]


class QuestionRecord(_Raw):
    question_id: SafeId
    question: Annotated[Text, AfterValidator(_has_text),
                        _at_most(MAX_QUESTION_CHARS, "mobilemem.dataset_records.MAX_QUESTION_CHARS")]
    answer: Annotated[str | list[str], BeforeValidator(_answer), AfterValidator(encodable)]
    question_type: Text
    question_format: Text | None = None
    difficulty: Text | None = None
    language: Text | None = None
    evidence: list[Annotated[dict[str, Any], AfterValidator(encodable)]] = Field(default_factory=list)


class QuestionsRecord(_Raw):
    uuid: int = Field(ge=0, le=MAX_USER_ID)
    language: Language
    questions: list[QuestionRecord]  # ids unique across the dataset: `dataset_checks.check_unique_ids`


M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class JsonLine:
    number: int
    where: str
    raw: Any

    @property
    def uuid(self) -> int | None:
        value = self.raw.get("uuid") if isinstance(self.raw, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None


def item_label(items: Any, i: int, key: str, kind: type) -> str:
    """The item's own id (`key`) if it is valid (right type; a safe id for strings), else its 1-based position."""
    value = items[i].get(key) if isinstance(items, list) and isinstance(items[i], dict) else None
    if isinstance(value, str) and not _SAFE_ID.fullmatch(value):
        value = None  # an invalid id could hold a newline or a megabyte; its own problem shows it
    return str(value) if isinstance(value, kind) and not isinstance(value, bool) else f"#{i + 1}"


def _context(raw: Any, loc: tuple[Any, ...]) -> str:
    """' session 3_7 turn 12' for a location inside sessions[i].dialogue[j], else ''."""
    try:
        if loc[:1] == ("sessions",) and isinstance(loc[1], int):
            session = raw["sessions"][loc[1]]
            text = f" session {item_label(raw['sessions'], loc[1], 'session_id', str)}"
            if loc[2:3] == ("dialogue",) and len(loc) > 3 and isinstance(loc[3], int):
                text += f" turn {item_label(session['dialogue'], loc[3], 'turn', int)}"
            return text
        if loc[:1] == ("questions",) and isinstance(loc[1], int):
            return f" question {item_label(raw['questions'], loc[1], 'question_id', str)}"
    except (KeyError, IndexError, TypeError):
        pass
    return ""


def _field(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.startswith(("function-", "str", "list[", "int", "float")) or "validator" in part:
            continue  # union-branch and validator names pydantic inserts: not part of the file
        else:
            out += f".{part}" if out else part
    return out or "(record)"


def _describe(error: dict[str, Any]) -> str:
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "missing":
        return "field required"
    value = error.get("input")
    if isinstance(value, (dict, list)) and error["type"] == "value_error":
        return message  # one of our own rules, whose message describes the container
    shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return f"{message} (got {shown[:80]})"


def parse_jsonl(path: Path, problems: list[str]) -> list[JsonLine]:
    """Every non-blank line of `path` as parsed JSON; unreadable lines become problems."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        problems.append(f"{path.name}: cannot be read: {exc.strerror}")
        return []
    lines = []
    for number, chunk in enumerate(data.split(b"\n"), start=1):
        where = f"{path.name}:{number}"
        if not chunk.strip():
            continue
        try:
            lines.append(JsonLine(number=number, where=where, raw=json.loads(chunk.decode("utf-8"))))
        except UnicodeDecodeError as exc:
            problems.append(f"{where}: not UTF-8 text (byte {exc.start}: {chunk[exc.start:exc.start + 1]!r})")
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not valid JSON: {exc.msg} at column {exc.colno}")
        except RecursionError:
            problems.append(f"{where}: JSON nested too deeply to read")
        except ValueError as exc:  # an integer longer than Python's int_max_str_digits
            problems.append(f"{where}: not valid JSON: {str(exc).split(';')[0]}")
    return lines


_WHOLE_LINE: Any = object()


def validate(line: JsonLine, model: type[M], problems: list[str], *, value: Any = _WHOLE_LINE,
             loc: tuple[Any, ...] = ()) -> M | None:
    """Validate `value` (default: the whole line) found at `loc` in the line; report each error."""
    try:
        return model.model_validate(line.raw if value is _WHOLE_LINE else value)
    except ValidationError as exc:
        user = f" user {line.uuid}" if line.uuid is not None else ""
        errors = exc.errors()
        for error in errors[:MAX_PROBLEMS_PER_LINE]:
            full = (*loc, *error["loc"])
            problems.append(f"{line.where}{user}{_context(line.raw, full)}: {_field(full)}: {_describe(error)}")
        if len(errors) > MAX_PROBLEMS_PER_LINE:
            problems.append(f"{line.where}{user}: ... and {len(errors) - MAX_PROBLEMS_PER_LINE} more problems")
        return None


def validate_sessions(line: JsonLine, problems: list[str]) -> list[SessionRecord]:
    """The valid sessions of a user line, each validated on its own (so that their images can still be
    checked), even when the rest of the line is invalid (so that every problem is reported at once)."""
    raw = line.raw.get("sessions") if isinstance(line.raw, dict) else None
    if not isinstance(raw, list):
        return []  # reported by the user line's own validation
    sessions = [validate(line, SessionRecord, problems, value=item, loc=("sessions", i)) for i, item in enumerate(raw)]
    return [s for s in sessions if s is not None]
