import hashlib
import json
import shutil
from pathlib import Path

from conftest import MARKER
from dataset_files import read_jsonl as _jsonl
from dataset_files import refusal as _problems
from dataset_files import write_jsonl as _write_jsonl
from mobilemem.dataset import load_dataset
from mobilemem.images import image_for_model


def test_sample_loads_and_selects_only_visual_reasoning(sample_root):
    dataset = load_dataset(sample_root)
    raw_questions = _jsonl(sample_root / "questions.jsonl")
    expected = [q["question_id"] for line in raw_questions for q in line["questions"]
                if q["question_type"] == "visual_reasoning"]
    assert [q.question_id for u in dataset.users for q in u.questions] == expected
    assert set(dataset.judge_questions) == set(expected)
    types = {q["question_type"] for line in raw_questions for q in line["questions"]}
    assert {"multi_visual_reasoning", "visual_reasoning"} <= types and len(types) >= 4
    assert [u.user_id for u in dataset.users] == [0, 1, 2]
    assert dataset.data_sha256 == hashlib.sha256((sample_root / "data.jsonl").read_bytes()).hexdigest()


def test_sessions_sorted_by_start_time_then_file_order(sample_root):
    dataset = load_dataset(sample_root)
    raw = {u["uuid"]: u for u in _jsonl(sample_root / "data.jsonl")}
    for user in dataset.users:
        file_order = [s["session_id"] for s in raw[user.user_id]["sessions"]]
        starts = {s["session_id"]: s["event_start_time"] for s in raw[user.user_id]["sessions"]}
        got = [s.session_id for s in user.sessions]
        assert got == sorted(file_order, key=lambda sid: (starts[sid], file_order.index(sid)))
    assert [s.session_id for s in dataset.users[0].sessions][:3] == ["0_1", "0_3", "0_2"]
    tied = [s for s in dataset.users[1].sessions if s.session_id in {"1_3", "1_4"}]
    assert [s.session_id for s in tied] == ["1_3", "1_4"]
    assert tied[0].event_start_time == tied[1].event_start_time == "2024-03-24 19:15:00"


def test_turns_are_verbatim_and_images_resolve(sample_root):
    dataset = load_dataset(sample_root)
    raw = {u["uuid"]: u for u in _jsonl(sample_root / "data.jsonl")}
    for user in dataset.users:
        by_id = {s["session_id"]: s for s in raw[user.user_id]["sessions"]}
        for session in user.sessions:
            for turn, original in zip(session.turns, by_id[session.session_id]["dialogue"], strict=True):
                assert turn.turn == original["turn"] and turn.role == original["role"]
                if original["content_type"] == "text":
                    assert turn.text == original["content"] and turn.image is None
                else:
                    assert turn.image.image_id == original["image_inline"] and turn.text is None
                    assert dataset.path_of(turn.image).is_file()
    assert any("\n" in (t.text or "") for u in dataset.users for s in u.sessions for t in s.turns)


def test_every_special_image_is_resolved_and_passed_correctly(sample_root):
    dataset = load_dataset(sample_root)
    images = {t.image.image_id: t.image for u in dataset.users for s in u.sessions for t in s.turns if t.image}
    formats = {img.format for img in images.values()}
    assert {"PNG", "JPEG", "MPO"} <= formats
    gbk = next(img for ref, img in images.items() if ref.endswith("相册_1_2.png"))
    assert "相册" not in gbk.path  # resolved to the mojibake name zipfile extracted
    assert any(ref.endswith("照片_1_1.png") for ref in images)
    for img in images.values():
        path = dataset.path_of(img)
        sent = image_for_model(path, Path(img.image_id).name)
        if img.format == "MPO":
            assert sent.media_type == "image/png" and sent.filename.endswith(".png")
        else:
            assert hashlib.sha256(sent.data).hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()


def test_candidate_view_carries_no_reference_or_generator_field(sample_root):
    dataset = load_dataset(sample_root)
    candidate = json.dumps([u.model_dump(mode="json") for u in dataset.users], ensure_ascii=False)
    judge = json.dumps([q.model_dump(mode="json") for q in dataset.judge_questions.values()], ensure_ascii=False)
    assert MARKER not in candidate
    assert MARKER in judge  # the same walk finds markers where they belong
    assert MARKER in (sample_root / "data.jsonl").read_text(encoding="utf-8")


def test_omni_subfolder_layout_is_accepted(sample_copy):
    omni = sample_copy / "omni"
    omni.mkdir()
    for name in ("data.jsonl", "questions.jsonl", "image.zip", "image"):
        shutil.move(sample_copy / name, omni / name)
    assert len(load_dataset(sample_copy).users) == 3


def test_user_filter_and_question_limit(sample_root):
    dataset = load_dataset(sample_root, users=[1], limit_questions=2)
    assert [u.user_id for u in dataset.users] == [1]
    assert [q.question_id for q in dataset.users[0].questions] == ["1_q_1", "1_q_2"]
    assert set(dataset.judge_questions) == {"1_q_1", "1_q_2"}
    assert _problems(sample_root, users=[1, 42]) == ["--users: user 42 is not in data.jsonl"]


def test_users_without_selected_questions_are_not_scheduled_nor_checked(sample_copy):
    lines = _jsonl(sample_copy / "questions.jsonl")
    lines[2]["questions"] = [q for q in lines[2]["questions"] if q["question_type"] != "visual_reasoning"]
    _write_jsonl(sample_copy / "questions.jsonl", lines)
    shutil.rmtree(sample_copy / "image" / "uid2")  # its images would fail preflight if it were scheduled
    assert [u.user_id for u in load_dataset(sample_copy).users] == [0, 1]


def test_missing_image_folder_prints_the_extract_command(sample_copy):
    shutil.rmtree(sample_copy / "image")
    [problem] = _problems(sample_copy)
    assert f"python -m zipfile -e {sample_copy / 'image.zip'} {sample_copy / 'image'}" in problem


def test_every_problem_is_reported_at_once(sample_copy):
    users = _jsonl(sample_copy / "data.jsonl")
    image_turns = [(s, t) for s in users[0]["sessions"] for t in s["dialogue"] if t["content_type"] == "image"]
    img = sample_copy / "image" / "uid0"
    files = {p.name: p for p in img.rglob("*") if p.is_file()}

    del users[2]["sessions"][1]["event_start_time"]                           # missing field
    (s_dots, t_dots), (s_miss, t_miss), (s_amb, t_amb), (s_txt, t_txt), (s_cut, t_cut) = image_turns[1:6]
    t_dots["image_inline"] = "image/uid0/../../../../etc/passwd"              # escaping reference
    files[Path(t_miss["image_inline"]).name].unlink()                        # missing image
    amb = files[Path(t_amb["image_inline"]).name]
    (img / "other").mkdir()
    shutil.copy(amb, img / "other" / amb.name)                               # ambiguous basename
    files[Path(t_txt["image_inline"]).name].write_bytes(b"this is not an image")  # non-image bytes
    cut = files[Path(t_cut["image_inline"]).name]
    cut.write_bytes(cut.read_bytes()[:-200])                                 # truncated image
    users[1]["sessions"][0]["dialogue"][0]["turn"] = "one"                   # wrong type
    _write_jsonl(sample_copy / "data.jsonl", users)
    with (sample_copy / "data.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"uuid": 7, "language": "en", "sessions": [\n')        # bad JSON line (line 4)
    questions = _jsonl(sample_copy / "questions.jsonl")
    questions.append({"uuid": 99, "language": "en", "questions": []})        # unknown user
    del questions[1]["questions"][0]["answer"]                               # missing answer
    _write_jsonl(sample_copy / "questions.jsonl", questions)

    problems = _problems(sample_copy)
    text = "\n".join(problems)
    s1 = users[2]["sessions"][1]["session_id"]
    expected = [
        f"data.jsonl:3 user 2 session {s1}: sessions[1].event_start_time: field required",
        "data.jsonl:2 user 1 session 1_1 turn #1: sessions[0].dialogue[0].turn: Input should be a valid integer",
        "data.jsonl:4: not valid JSON",
        "questions.jsonl:4 user 99: has questions but is not in data.jsonl",
        "questions.jsonl:2 user 1 question 1_q_1: questions[0].answer: field required",
        f"session {s_dots['session_id']} turn {t_dots['turn']}: image 'image/uid0/../../../../etc/passwd' matches no file",
        f"session {s_miss['session_id']} turn {t_miss['turn']}: image '{t_miss['image_inline']}' matches no file",
        f"session {s_amb['session_id']} turn {t_amb['turn']}: image '{t_amb['image_inline']}' matches 2 files",
        f"session {s_txt['session_id']} turn {t_txt['turn']}: image '{t_txt['image_inline']}' is not a readable image",
        f"session {s_cut['session_id']} turn {t_cut['turn']}: image '{t_cut['image_inline']}' ",
    ]
    for fragment in expected:
        assert fragment in text, f"missing {fragment!r} in:\n{text}"
    assert "is a truncated" in text
    assert len(problems) == len(expected)
