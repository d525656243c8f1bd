"""examples/generate_sample.py: deterministic, official layout, planted traps and markers."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from PIL import Image

from mobilemem.simulator.vision import COLOURS, read_fact

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples"))

from generate_sample import MARKER, generate, main  # noqa: E402

SAMPLE = REPO / "examples" / "sample"
FILES = ("data.jsonl", "questions.jsonl", "image.zip")
USER_KEYS = ["uuid", "language", "Basic_Profile", "Init_State", "Important_Dates", "session_stats_summary",
             "_errors", "sessions"]
GENERATOR_FIELDS = USER_KEYS[2:7]
SESSION_KEYS = ["session_id", "event_id", "event_start_time", "event_end_time", "event_name", "dialogue_goal",
                "dialogue_summary", "image_refs", "image_candidates", "memory_points", "session_stats", "dialogue"]
QUESTION_KEYS = ["question_id", "question", "answer", "question_format", "question_type", "difficulty",
                 "evidence", "image_refs", "source_session_ids", "source_event_ids"]
MARK_RE = re.compile(rf"{MARKER}-([a-z]+)-(\d+)-(\d+)")
CJK_RE = re.compile(r"[\u4e00-\u9fff]")
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
# Several parameter sets: the traps must exist for every dataset with at least two users.
VARIANTS = [{}, {"users": 2, "sessions": 2, "turns": 3, "images": 1, "questions": 1},
            {"users": 5, "sessions": 6, "turns": 11, "images": 4, "questions": 9, "seed": 7},
            {"users": 1, "sessions": 3, "seed": 3}]


class Dataset:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.users = [json.loads(line) for line in (root / "data.jsonl").read_text("utf-8").splitlines()]
        self.questions = [json.loads(line) for line in (root / "questions.jsonl").read_text("utf-8").splitlines()]
        self.zip = zipfile.ZipFile(root / "image.zip")
        self.members = {}  # (uid, basename) -> ZipInfo, names decoded as their writer meant them
        for info in self.zip.infolist():
            name = info.filename if info.flag_bits & 0x800 else info.orig_filename.encode("cp437").decode("gbk")
            uid, _folder, base = name.split("/")
            assert (uid, base) not in self.members, name
            self.members[(uid, base)] = info

    def member(self, dialogue_path: str) -> zipfile.ZipInfo:
        _image, uid, _folder, base = dialogue_path.split("/")
        return self.members[(uid, base)]

    def image(self, dialogue_path: str) -> Image.Image:
        return Image.open(io.BytesIO(self.zip.read(self.member(dialogue_path))))


def _generate(root: Path, **kwargs: object) -> Dataset:
    generate(root, **kwargs)  # type: ignore[arg-type]
    return Dataset(root)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _has_marker(value: object) -> bool:
    return any(MARKER in s for s in _strings(value))


def test_output_is_deterministic_and_matches_the_committed_sample(tmp_path: Path) -> None:
    generate(tmp_path / "a")
    generate(tmp_path / "b")
    for name in FILES:
        first = (tmp_path / "a" / name).read_bytes()
        assert first == (tmp_path / "b" / name).read_bytes(), name
        assert first == (SAMPLE / name).read_bytes(), f"examples/sample/{name} is stale: regenerate it"
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(FILES)


def test_seed_changes_the_output(tmp_path: Path) -> None:
    generate(tmp_path / "a", seed=0)
    generate(tmp_path / "b", seed=1)
    assert (tmp_path / "a" / "data.jsonl").read_bytes() != (tmp_path / "b" / "data.jsonl").read_bytes()


def test_committed_sample_is_small() -> None:
    files = [p for p in SAMPLE.rglob("*") if p.is_file() and "image" not in p.relative_to(SAMPLE).parts[:1]]
    assert sorted(p.name for p in files) == sorted(FILES)
    assert sum(p.stat().st_size for p in files) < 1_000_000


def test_refuses_a_non_empty_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "keep.txt").write_text("x")
    with pytest.raises(FileExistsError, match="refusing"):
        generate(tmp_path)
    assert main(["--out", str(tmp_path)]) == 1
    assert "refusing" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize("kwargs", [{"sessions": 1}, {"turns": 2}, {"users": 0}, {"image_size": (100, 80)}])
def test_refuses_bad_arguments(tmp_path: Path, kwargs: dict) -> None:
    with pytest.raises(ValueError):
        generate(tmp_path / "out", **kwargs)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kwargs", VARIANTS)
def test_special_files_exist(tmp_path: Path, kwargs: dict) -> None:
    data = _generate(tmp_path / "out", **kwargs)
    infos = data.zip.infolist()
    payload = {info.filename: data.zip.read(info) for info in infos}
    jpeg_png = [n for n, b in payload.items() if n.endswith(".png") and b.startswith(b"\xff\xd8\xff")]
    plain_png = [n for n, b in payload.items() if n.endswith(".png") and b.startswith(b"\x89PNG\r\n\x1a\n")]
    mpo = [n for n, b in payload.items() if n.endswith(".jpg") and Image.open(io.BytesIO(b)).format == "MPO"]
    assert jpeg_png and mpo and len(plain_png) >= len(infos) / 2
    assert all(n.endswith(".png") for n in payload if n not in mpo)
    gbk = [i for i in infos if not i.flag_bits & 0x800 and not i.orig_filename.isascii()]
    assert len(gbk) == 1
    raw = gbk[0].orig_filename.encode("cp437")
    assert b"\\" not in raw and CJK_RE.search(raw.decode("gbk"))
    cjk = [i for i in infos if i.flag_bits & 0x800]
    assert cjk and all(CJK_RE.search(i.filename) for i in cjk)
    archive = (data.root / "image.zip").read_bytes()
    assert raw in archive and raw.decode("gbk").encode("utf-8") not in archive
    assert all(re.match(r"^uid\d+/[^/]+/[^/]+$", i.filename) for i in infos)
    assert all(i.date_time == (2025, 1, 1, 0, 0, 0) for i in infos)


@pytest.mark.parametrize("kwargs", VARIANTS)
def test_dialogue_paths_alias_the_archive(tmp_path: Path, kwargs: dict) -> None:
    data = _generate(tmp_path / "out", **kwargs)
    pairs, used = set(), set()
    for user in data.users:
        for session in user["sessions"]:
            for turn in session["dialogue"]:
                if turn["content_type"] == "image":
                    path = turn["image_inline"]
                    assert path.startswith(f"image/uid{user['uuid']}/")
                    info = data.member(path)
                    pairs.add((path.split("/")[2], info.filename.split("/")[1]))
                    used.add(info.filename)
            assert session["image_candidates"] == [r["image_path"] for r in session["image_refs"]]
    assert used == {i.filename for i in data.zip.infolist()}
    assert all(dialogue != archive for dialogue, archive in pairs)
    assert {("camera photos", "camera_photos"), ("event", "chat_images")} <= pairs


@pytest.mark.parametrize("kwargs", VARIANTS)
def test_records_follow_the_official_layout(tmp_path: Path, kwargs: dict) -> None:
    data = _generate(tmp_path / "out", **kwargs)
    turns, images = kwargs.get("turns", 8), kwargs.get("images", 2)
    assert [u["uuid"] for u in data.users] == list(range(kwargs.get("users", 3)))
    assert [q["uuid"] for q in data.questions] == [u["uuid"] for u in data.users]
    newline = False
    for user in data.users:
        uid, lang = user["uuid"], user["language"]
        assert list(user) == USER_KEYS and lang == ("en" if uid % 2 == 0 else "Chinese")
        events = set()
        for n, session in enumerate(user["sessions"], start=1):
            assert list(session) == SESSION_KEYS
            assert (session["session_id"], session["event_id"]) == (f"{uid}_{n}", f"{uid}_e_{n}")
            assert TIME_RE.match(session["event_start_time"]) and TIME_RE.match(session["event_end_time"])
            assert session["event_end_time"] > session["event_start_time"]
            dialogue = session["dialogue"]
            assert [t["turn"] for t in dialogue] == list(range(1, turns + 1))
            assert sum(t["content_type"] == "image" for t in dialogue) == images
            for turn in dialogue:
                payload = "image_inline" if turn["content_type"] == "image" else "content"
                assert list(turn) == ["turn", "role", "content_type", payload] and turn["role"] in ("user", "assistant")
                if turn["content_type"] == "image":
                    assert turn["role"] == "user"
                else:
                    newline |= "\n" in turn["content"]
                    assert turn["content"].isascii() if lang == "en" else CJK_RE.search(turn["content"])
            events.add(session["event_name"])
        assert len(events) == len(user["sessions"])
    assert newline


def test_session_times_are_out_of_order_and_tied(tmp_path: Path) -> None:
    data = _generate(tmp_path / "out")
    starts = [[s["event_start_time"] for s in u["sessions"]] for u in data.users]
    assert any(times != sorted(times) for times in starts)
    assert any(len(set(times)) < len(times) for times in starts)
    days = {datetime.strptime(t, "%Y-%m-%d %H:%M:%S").date() for times in starts for t in times}
    assert len(days) >= 5


@pytest.mark.parametrize("kwargs", VARIANTS)
def test_questions_follow_the_official_layout(tmp_path: Path, kwargs: dict) -> None:
    data = _generate(tmp_path / "out", **kwargs)
    listed = False
    for record, user in zip(data.questions, data.users, strict=True):
        assert list(record) == ["uuid", "language", "questions"] and record["language"] == user["language"]
        sessions = {s["session_id"]: s for s in user["sessions"]}
        photos = sum(len(s["image_refs"]) for s in user["sessions"])
        types = [q["question_type"] for q in record["questions"]]
        visual = min(kwargs.get("questions", 3), photos)
        assert types == ["visual_reasoning"] * visual + ["multi_visual_reasoning", "temporal_reasoning",
                                                         "factual_recall"]
        for n, question in enumerate(record["questions"], start=1):
            assert list(question) == QUESTION_KEYS and question["question_id"] == f"{user['uuid']}_q_{n}"
            assert question["question_format"] == "open" and question["difficulty"] in ("easy", "medium", "hard")
            assert question["source_session_ids"] == [e["session_id"] for e in question["evidence"]]
            assert question["source_event_ids"] == [sessions[e["session_id"]]["event_id"] for e in question["evidence"]]
            if user["language"] == "Chinese":
                assert CJK_RE.search(question["question"])
            if question["question_type"] == "visual_reasoning":
                (evidence,) = question["evidence"]
                assert question["image_refs"] == [evidence["image_path"]]
                explanation = evidence["explanation"]
                assert isinstance(explanation, dict) and list(explanation) == ["image", "context"]
                source = sessions[evidence["session_id"]]
                assert evidence["image_path"] in source["image_candidates"]
                words = re.split(r"[在\s]| at ", source["event_name"])
                assert all(w.lower() in question["question"].lower() for w in words if w)
                listed |= len(question["answer"]) > 2
    assert listed


def test_markers_everywhere_they_belong(tmp_path: Path) -> None:
    data = _generate(tmp_path / "out", users=4)
    seen: list[str] = []
    for user in data.users:
        for name in GENERATOR_FIELDS:
            assert _has_marker(user[name]), name
        for session in user["sessions"]:
            assert _has_marker(session["dialogue_summary"]) and _has_marker(session["session_stats"])
            assert session["image_refs"] and all(_has_marker(r["description"]) for r in session["image_refs"])
            assert session["memory_points"] and all(_has_marker(m) for m in session["memory_points"])
        for text in _strings(user):
            for _kind, uid, _n in MARK_RE.findall(text):
                assert int(uid) == user["uuid"]
            seen += [m.group(0) for m in MARK_RE.finditer(text)]
    for record in data.questions:
        for question in record["questions"]:
            answers = question["answer"]
            assert isinstance(answers, list) and [MARKER in a for a in answers].count(True) == 1
            assert answers[-1].startswith(answers[0] + " ") and MARKER not in answers[0]
            assert question["evidence"]
            for evidence in question["evidence"]:
                explanation = evidence["explanation"]
                parts = explanation.values() if isinstance(explanation, dict) else [explanation]
                assert all(MARKER in part for part in parts)
            seen += [m.group(0) for text in _strings(question) for m in MARK_RE.finditer(text)]
    assert len(seen) == len(set(seen)), "markers must be unique"


@pytest.mark.parametrize("kwargs", VARIANTS)
def test_markers_never_reach_what_the_candidate_sees(tmp_path: Path, kwargs: dict) -> None:
    data = _generate(tmp_path / "out", **kwargs)
    for user in data.users:
        for session in user["sessions"]:
            visible = [session["session_id"], session["event_id"], session["event_start_time"],
                       session["event_end_time"], session["dialogue"]]
            assert not _has_marker(visible)
    for record in data.questions:
        assert not any(MARKER in q["question"] for q in record["questions"])
    assert not any(MARKER in info.orig_filename for info in data.zip.infolist())
    assert MARKER.encode() not in (data.root / "image.zip").read_bytes()


def test_facts_only_in_pixels(tmp_path: Path) -> None:
    """Dialogue text names no colour and no digit: only the image can answer."""
    data = _generate(tmp_path / "out")
    colour = re.compile(rf"\b({'|'.join(COLOURS)})\b", re.IGNORECASE)
    for user in data.users:
        for session in user["sessions"]:
            for text in _strings([t.get("content", "") for t in session["dialogue"]]):
                assert not colour.search(text) and not re.search(r"\d|[红蓝绿黄青紫粉]", text), text


@pytest.mark.parametrize("kwargs", [*VARIANTS, {"users": 2, "image_size": (160, 120)}])
def test_pixels_agree_with_the_references(tmp_path: Path, kwargs: dict) -> None:
    data = _generate(tmp_path / "out", **kwargs)
    description = re.compile(r"digit (\d) on a (\w+) background")
    for user in data.users:
        for session in user["sessions"]:
            for ref in session["image_refs"]:
                digit, colour = description.search(ref["description"]).groups()
                assert read_fact(data.image(ref["image_path"])) == (colour, int(digit)), ref["image_path"]
    for record in data.questions:
        for question in record["questions"]:
            facts = [read_fact(data.image(path)) for path in question["image_refs"]]
            gold = question["answer"][0]
            if question["question_type"] == "visual_reasoning":
                ((colour, digit),) = facts
                assert gold == (str(digit) if gold.isdigit() else colour), question["question_id"]
            elif question["question_type"] == "multi_visual_reasoning":
                assert int(gold) == sum(digit for _, digit in facts)


def test_mpo_second_frame_shows_another_fact(tmp_path: Path) -> None:
    data = _generate(tmp_path / "out")
    (name,) = [n for n in data.zip.namelist() if n.endswith(".jpg")]
    image = Image.open(io.BytesIO(data.zip.read(name)))
    assert image.format == "MPO" and image.n_frames == 2
    first = read_fact(image)
    image.seek(1)
    assert read_fact(image)[0] not in (None, first[0])


def test_script_extracts_like_python_m_zipfile(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, str(REPO / "examples" / "generate_sample.py"), "--out", str(out),
                             "--users", "2", "--image-size", "200x150", "--extract"],
                            capture_output=True, text=True, check=True, cwd=tmp_path)
    assert re.search(r"2 users, 8 sessions, 16 images, 6 selected visual questions, \d+ bytes", result.stdout)
    data = Dataset(out)
    gbk = [key for key, info in data.members.items() if not info.flag_bits & 0x800 and not key[1].isascii()]
    assert len(gbk) == 1 and CJK_RE.search(gbk[0][1])
    uid, base = gbk[0]
    # What `python -m zipfile -e` makes of a GBK name without the UTF-8 flag: cp437 mojibake.
    mojibake = next((out / "image" / uid).glob(f"*/{base.encode('gbk').decode('cp437')}"))
    assert mojibake.is_file() and not CJK_RE.search(mojibake.name)
    extracted = [p for p in (out / "image").rglob("*") if p.is_file()]
    assert len(extracted) == len(data.zip.infolist())
    for info in data.zip.infolist():
        assert (out / "image" / info.filename).read_bytes() == data.zip.read(info)
    assert Image.open(mojibake).size == (200, 150)
