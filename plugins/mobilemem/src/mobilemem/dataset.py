"""The MobileMem-Omni release in its official layout, validated before anything is spent (DESIGN §3).

`load_dataset` reads `data.jsonl`, `questions.jsonl` and the extracted `image/` folder (at the
root or under `omni/`), checks every record, cross-reference and image reference, and either
returns a `Dataset` or raises `DatasetError` listing every problem, one line each. Whatever
would only fail later is refused here, before any model request: rules on one record are in
`mobilemem.dataset_records`, rules across records in `mobilemem.dataset_checks`, and every image
that is sent is decoded in full (`mobilemem.images`), once per file state (`mobilemem.image_cache`).

Raw file shapes stay in `mobilemem.dataset_records`. Other modules see only views named for their
reader: `CandidateSession` and `CandidateQuestion` have no reference fields at all;
`JudgeQuestion` (the judge's view) has them. The images' content hashes, computed by preflight from
the bytes it decoded, are in `Dataset.image_sha256`, never in a candidate's view.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from mobilemem.dataset_checks import check_evidence_sessions, check_sessions, check_unique_ids
from mobilemem.dataset_records import (
    JsonLine,
    QuestionRecord,
    QuestionsRecord,
    SessionRecord,
    UserRecord,
    parse_jsonl,
    validate,
    validate_sessions,
)
from mobilemem.dataset_identity import DatasetIdentity, images_digest
from mobilemem.dataset_text import text_problem
from mobilemem.errors import DatasetError
from mobilemem.image_cache import verify_images
from mobilemem.images import ImageIndex, ImageInfo, ImageProblem, build_index, printable, quoted

DATASET_ID = "zjunlp/MobileMem-Omni"
DATASET_REVISION = "989ba00900bddf4e0d4b0c7dd52f0840a7ee3a54"
SELECTED_TYPE = "visual_reasoning"
_Checked = dict[Path, ImageInfo | ImageProblem]


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CandidateImage(_View):
    image_id: str  # the original dialogue path string
    path: str  # dataset-relative path of the resolved file
    format: str


class CandidateTurn(_View):
    turn: int
    role: Literal["user", "assistant"]
    text: str | None = None
    image: CandidateImage | None = None


class CandidateSession(_View):
    user_id: int
    session_id: str
    event_start_time: str
    event_end_time: str
    turns: list[CandidateTurn]


class CandidateQuestion(_View):
    user_id: int
    question_id: str
    question: str


class JudgeQuestion(_View):
    user_id: int
    question_id: str
    question: str
    answer: str | list[str]
    evidence: list[dict[str, Any]]
    question_type: str
    question_format: str | None
    difficulty: str | None
    language: str


class ScheduledUser(_View):
    user_id: int
    language: str
    sessions: list[CandidateSession]
    questions: list[CandidateQuestion]


@dataclass(frozen=True)
class Dataset:
    """The validated release. `judge_questions` is keyed by question id alone, and the run's folders
    and ReMe's files by session and question id: preflight refuses any session or question id
    used twice in the whole dataset (by any user, ignoring case), so no two users collide there."""

    root: Path  # the folder holding data.jsonl (the given path or its omni/ subfolder)
    data_sha256: str
    questions_sha256: str
    users: list[ScheduledUser]
    judge_questions: dict[str, JudgeQuestion]
    users_in_file: int
    image_sha256: dict[str, str]  # dataset-relative path (CandidateImage.path) -> sha256 of the file's bytes

    def path_of(self, image: CandidateImage) -> Path:
        return self.root / image.path

    def images_of(self, user: ScheduledUser) -> dict[str, str]:
        """The user's images: dataset-relative path -> sha256."""
        return {t.image.path: self.image_sha256[t.image.path] for s in user.sessions for t in s.turns
                if t.image is not None}

    def identity(self) -> DatasetIdentity:
        """What run.json records of this dataset: its files' sha256 and each user's images digest."""
        return DatasetIdentity(str(self.root), self.data_sha256, self.questions_sha256,
                               {str(u.user_id): images_digest(self.images_of(u).items()) for u in self.users})


def locate(root: Path) -> Path:
    """The folder holding the release files: `root` itself or `root/omni`."""
    for candidate in (root, root / "omni"):
        if (candidate / "data.jsonl").is_file() and (candidate / "questions.jsonl").is_file():
            return candidate
    raise DatasetError([f"{root}: no data.jsonl and questions.jsonl here or under omni/ (is this the dataset folder?)"])


def candidate_sessions(user_id: int, records: list[SessionRecord], index: ImageIndex, where: str,
                       problems: list[str], checked: _Checked) -> list[CandidateSession]:
    """The user's sessions as the candidate sees them, by event_start_time then file order;
    `checked` holds the inspection of every file the user's image turns resolve to."""
    ordered = sorted(enumerate(records), key=lambda pair: (pair[1].start, pair[0]))
    sessions = []
    for _, record in ordered:
        turns = []
        for turn in record.dialogue:
            image = None
            if turn.content_type == "image":
                assert turn.image_inline is not None
                image = _candidate_image(user_id, turn.image_inline, index, checked, problems,
                                         f"{where} session {record.session_id} turn {turn.turn}")
            turns.append(CandidateTurn(turn=turn.turn, role=turn.role, image=image,
                                       text=turn.content if turn.content_type == "text" else None))
        sessions.append(CandidateSession(user_id=user_id, session_id=record.session_id, turns=turns,
                                         event_start_time=record.event_start_time,
                                         event_end_time=record.event_end_time))
    return sessions


def _candidate_image(user_id: int, ref: str, index: ImageIndex, checked: _Checked, problems: list[str],
                     where: str) -> CandidateImage | None:
    try:
        path = index.resolve(user_id, ref)
    except ImageProblem as exc:
        problems.append(f"{where}: {exc}")
        return None
    info = checked[path]
    if isinstance(info, ImageProblem):
        problems.append(f"{where}: image {quoted(ref)} {info}")
        return None
    relative = path.relative_to(index.root.parent).as_posix()
    if text_problem(relative):  # a folder name that is not UTF-8 on disk: the path is written to the run's files
        problems.append(f"{where}: image {quoted(ref)} resolves to {printable(relative)}, whose path is not UTF-8")
        return None
    return CandidateImage(image_id=ref, path=relative, format=info.format)


def select_questions(record: QuestionsRecord) -> list[tuple[CandidateQuestion, JudgeQuestion]]:
    """The user's `visual_reasoning` questions in file order, as (candidate view, judge view)."""
    return [(_candidate_question(record.uuid, q), _judge_question(record, q))
            for q in record.questions if q.question_type == SELECTED_TYPE]


def _candidate_question(user_id: int, q: QuestionRecord) -> CandidateQuestion:
    return CandidateQuestion(user_id=user_id, question_id=q.question_id, question=q.question)


def _judge_question(record: QuestionsRecord, q: QuestionRecord) -> JudgeQuestion:
    return JudgeQuestion(user_id=record.uuid, question_id=q.question_id, question=q.question, answer=q.answer,
                         evidence=q.evidence, question_type=q.question_type, question_format=q.question_format,
                         difficulty=q.difficulty, language=q.language or record.language)


def _inspect_referenced(index: ImageIndex, users: list[tuple[int, list[SessionRecord]]], base: Path,
                        image_cache: bool) -> _Checked:
    """Every file that these users' image turns resolve to, inspected once, in parallel (or cached)."""
    paths = set()
    for uid, sessions in users:
        for turn in (t for s in sessions for t in s.dialogue if t.content_type == "image" and t.image_inline):
            try:
                paths.add(index.resolve(uid, turn.image_inline))
            except ImageProblem:
                continue  # reported with its session and turn when the views are built
    return verify_images(sorted(paths), base, use_cache=image_cache).results


def _image_hashes(users: list[ScheduledUser], base: Path, checked: _Checked) -> dict[str, str]:
    """The content hash preflight took of every image these users' sessions show (all inspected fine)."""
    hashes = {}
    for image in (t.image for u in users for s in u.sessions for t in s.turns if t.image is not None):
        info = checked[base / image.path]
        assert isinstance(info, ImageInfo)  # a problem was reported and refused the dataset
        hashes[image.path] = info.sha256
    return hashes


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class _Entry:
    """One user's line of a file: None record/sessions when it did not validate."""

    line: JsonLine
    record: Any
    sessions: list[SessionRecord]


def _read(path: Path, model: type[UserRecord] | type[QuestionsRecord], problems: list[str]) -> dict[int, _Entry]:
    entries: dict[int, _Entry] = {}
    for line in parse_jsonl(path, problems):
        record = validate(line, model, problems)
        sessions = validate_sessions(line, problems) if model is UserRecord else []
        uid = line.uuid
        if uid is None:
            continue  # the missing or invalid uuid is already reported
        if uid in entries:
            problems.append(f"{line.where}: user {uid} appears again (first at line {entries[uid].line.number})")
            continue
        entries[uid] = _Entry(line=line, record=record, sessions=sessions)
    return entries


def _image_index(base: Path, problems: list[str]) -> ImageIndex | None:
    image_root = base / "image"
    if not image_root.is_dir():
        problems.append(f"{image_root}: missing: extract the images first with "
                        f"`python -m zipfile -e {base / 'image.zip'} {image_root}`")
        return None
    index = build_index(image_root, base)
    problems.extend(f"{printable(p.relative_to(base).as_posix())}: is a symbolic link pointing outside the dataset"
                    for p in index.escapes)
    return index


def _check_records(users: dict[int, _Entry], questions: dict[int, _Entry], problems: list[str],
                   max_session_images: int | None) -> None:
    for uid, entry in questions.items():
        if uid not in users:
            problems.append(f"{entry.line.where} user {uid}: has questions but is not in data.jsonl")
    check_unique_ids([e.line for e in users.values()], [e.line for e in questions.values()], problems)
    check_evidence_sessions({uid: e.line for uid, e in users.items()}, [e.line for e in questions.values()], problems)
    for entry in users.values():
        check_sessions(entry.line, entry.sessions, problems, max_images=max_session_images)


def load_dataset(root: Path, *, users: Sequence[int] | None = None, limit_questions: int | None = None,
                 max_session_images: int | None = None, image_cache: bool = True) -> Dataset:
    """Validate the whole release and build the views; raise `DatasetError` with every problem.
    `max_session_images` is the candidate's `max_images`: a session holding more is refused;
    `image_cache=False` decodes every image again (config `image_cache`)."""
    base = locate(Path(root))
    problems: list[str] = []
    user_entries = _read(base / "data.jsonl", UserRecord, problems)
    question_entries = _read(base / "questions.jsonl", QuestionsRecord, problems)
    _check_records(user_entries, question_entries, problems, max_session_images)
    problems.extend(f"--users: user {uid} is not in data.jsonl" for uid in users or () if uid not in user_entries)

    wanted = set(users) if users is not None else set(user_entries)
    selected = {uid: pairs for uid, entry in question_entries.items()
                if uid in wanted and uid in user_entries and entry.record is not None
                and (pairs := select_questions(entry.record)[:limit_questions])}
    index = _image_index(base, problems) if selected else None
    order = sorted(selected, key=lambda u: user_entries[u].line.number)
    checked = _inspect_referenced(index, [(u, user_entries[u].sessions) for u in order
                                          if user_entries[u].record is not None], base, image_cache) if index else {}

    scheduled = []
    for uid in order:
        entry = user_entries[uid]
        if entry.record is None:
            continue  # already reported; nothing valid to check further
        sessions = (candidate_sessions(uid, entry.sessions, index, f"{entry.line.where} user {uid}", problems,
                                       checked) if index else [])
        scheduled.append(ScheduledUser(user_id=uid, language=entry.record.language, sessions=sessions,
                                       questions=[c for c, _ in selected[uid]]))
    if problems:
        raise DatasetError(problems)
    return Dataset(root=base, data_sha256=_sha256(base / "data.jsonl"),
                   questions_sha256=_sha256(base / "questions.jsonl"), users=scheduled,
                   judge_questions={j.question_id: j for pairs in selected.values() for _, j in pairs},
                   users_in_file=len(user_entries), image_sha256=_image_hashes(scheduled, base, checked))
