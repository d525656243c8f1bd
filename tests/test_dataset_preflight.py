"""Preflight rules for records that would only fail later (mid-run) or could mix users: ids unique
across the whole dataset, sessions with turns, bounded turn text, ids ReMe accepts as file names,
turn numbers and message ids ReMe can store, and images whose sent picture decodes in full.

Every test writes real files into a private copy of the sample (`sample_copy`) and checks the
problem lines `load_dataset` reports: one printable line each, all of them at once.
"""

import base64
import io
import random
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mobilemem.dataset import load_dataset
from mobilemem.dataset_checks import MAX_MESSAGE_ID_CHARS, MAX_TURN_TEXT_CHARS, message_id
from dataset_files import read_jsonl as _jsonl
from dataset_files import write_jsonl as _write_jsonl
from mobilemem.errors import DatasetError

ALLOWED_PREFIXES = ("data.jsonl:", "questions.jsonl:", "image/", "--users:")


def _problems(root: Path, **kwargs) -> list[str]:
    with pytest.raises(DatasetError) as info:
        load_dataset(root, **kwargs)
    problems = info.value.problems
    for problem in problems:
        assert problem.startswith(ALLOWED_PREFIXES), problem
        assert "Traceback" not in problem and len(problem) < 1000, problem
        assert not [ch for ch in problem if unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"}], problem
    return problems


def _session(users: list[dict], session_id: str) -> dict:
    return next(s for u in users for s in u["sessions"] if s["session_id"] == session_id)


# ---------------------------------------------------------------- ids unique across the dataset


def test_a_question_id_of_another_user_is_refused_naming_both(sample_copy):
    """`Dataset.judge_questions` is keyed by question id: user 2's `1_q_1` would be judged against
    user 1's answer (or replace it)."""
    questions = _jsonl(sample_copy / "questions.jsonl")
    questions[2]["questions"][0]["question_id"] = "1_q_1"
    questions[2]["questions"][3]["question_id"] = "1_Q_2"  # differs only in case
    questions[0]["questions"][5]["question_id"] = "0_q_1"  # twice on one line
    _write_jsonl(sample_copy / "questions.jsonl", questions)
    assert _problems(sample_copy) == [
        "questions.jsonl:1 user 0 question 0_q_1: question id '0_q_1' repeats (first at questions.jsonl:1 user 0, "
        "questions[0])",
        "questions.jsonl:3 user 2 question 1_q_1: question id '1_q_1' repeats (first at questions.jsonl:2 user 1, "
        "questions[0])",
        "questions.jsonl:3 user 2 question 1_Q_2: question id '1_Q_2' repeats (first at questions.jsonl:2 user 1, "
        "questions[1]), as '1_q_2': ids that differ only in case name the same file on a case-insensitive file system",
    ]


def test_a_repeated_id_is_reported_even_when_its_record_is_otherwise_invalid(sample_copy):
    questions = _jsonl(sample_copy / "questions.jsonl")
    questions[2]["questions"][0]["question_id"] = "1_q_1"
    del questions[2]["questions"][1]["answer"]
    _write_jsonl(sample_copy / "questions.jsonl", questions)
    problems = _problems(sample_copy)
    assert problems == [
        "questions.jsonl:3 user 2 question 2_q_2: questions[1].answer: field required",
        "questions.jsonl:3 user 2 question 1_q_1: question id '1_q_1' repeats (first at questions.jsonl:2 user 1, "
        "questions[0])",
    ]


def test_a_session_id_of_another_user_or_the_same_user_is_refused(sample_copy):
    users = _jsonl(sample_copy / "data.jsonl")
    _session(users, "2_3")["session_id"] = "0_1"
    _session(users, "1_4")["session_id"] = "1_1"
    _write_jsonl(sample_copy / "data.jsonl", users)
    assert _problems(sample_copy) == [
        "data.jsonl:2 user 1 session 1_1: session id '1_1' repeats (first at data.jsonl:2 user 1, sessions[0])",
        "data.jsonl:3 user 2 session 0_1: session id '0_1' repeats (first at data.jsonl:1 user 0, sessions[0])",
    ]


def test_judge_questions_hold_every_scheduled_question_of_every_user(sample_root):
    dataset = load_dataset(sample_root)
    scheduled = [(q.user_id, q.question_id) for u in dataset.users for q in u.questions]
    assert len(dataset.judge_questions) == len(scheduled) == len(set(scheduled))
    assert all(dataset.judge_questions[qid].user_id == uid for uid, qid in scheduled)


# ---------------------------------------------------------------- sessions and turns


def test_a_session_without_turns_is_refused(sample_copy):
    users = _jsonl(sample_copy / "data.jsonl")
    _session(users, "1_2")["dialogue"] = []
    _write_jsonl(sample_copy / "data.jsonl", users)
    assert _problems(sample_copy) == [
        "data.jsonl:2 user 1 session 1_2: sessions[1].dialogue: is empty: a session needs at least one turn"]


def test_a_text_turn_over_the_size_limit_is_refused_and_its_session_still_checked(sample_copy):
    users = _jsonl(sample_copy / "data.jsonl")
    session = _session(users, "0_1")
    session["dialogue"][0]["content"] = "x" * (MAX_TURN_TEXT_CHARS + 1)
    session["dialogue"][2]["image_inline"] = "image/uid0/missing.png"  # its images are still checked
    _write_jsonl(sample_copy / "data.jsonl", users)
    assert _problems(sample_copy) == [
        f"data.jsonl:1 user 0 session 0_1 turn 1: content is {MAX_TURN_TEXT_CHARS + 1:,} characters, more than the "
        f"{MAX_TURN_TEXT_CHARS:,} of mobilemem.dataset_checks.MAX_TURN_TEXT_CHARS",
        "data.jsonl:1 user 0 session 0_1 turn 3: image 'image/uid0/missing.png' matches no file under uid0/ in image/",
    ]


def test_a_repeated_turn_number_is_refused(sample_copy):
    """ReMe keeps one message per id, and the candidate's id is `<session_id>-t<turn>`."""
    users = _jsonl(sample_copy / "data.jsonl")
    _session(users, "2_2")["dialogue"][4]["turn"] = 3
    _write_jsonl(sample_copy / "data.jsonl", users)
    assert _problems(sample_copy) == [
        "data.jsonl:3 user 2 session 2_2 turn 3: turn number repeats (first at dialogue[2]): the candidate's "
        "message id <session_id>-t<turn> would name both"]


def test_message_ids_are_the_candidates(sample_root):
    from mobilemem.reme.ingest import session_messages

    dataset = load_dataset(sample_root)
    session = dataset.users[0].sessions[0]
    assert [m.id for m in session_messages(session, dataset.root)] == [
        message_id(session.session_id, t.turn) for t in session.turns]


@pytest.mark.asyncio
async def test_the_longest_message_id_fits_remes_attachment_name_and_one_more_does_not(tmp_path):
    """Pins `MAX_MESSAGE_ID_CHARS` to ReMe's own image saving (auto_memory), with the longest suffix."""
    from agentscope.message import Base64Source, DataBlock, Msg, TextBlock
    from reme.steps.evolve.auto_memory import _save_session_images

    png = io.BytesIO()
    Image.new("RGB", (2, 2)).save(png, format="WEBP")
    block = DataBlock(source=Base64Source(data=base64.b64encode(png.getvalue()).decode(), media_type="image/webp"))
    for length, fits in ((MAX_MESSAGE_ID_CHARS, True), (MAX_MESSAGE_ID_CHARS + 1, False)):
        msg = Msg(id="m" * length, name="user", role="user", content=[TextBlock(text="Image ID: x"),
                                                                         TextBlock(text="marker")])
        call = _save_session_images(tmp_path, "mem_session", "0_1", [msg], {"marker": block})
        if fits:
            assert len(await call) == 1
        else:
            with pytest.raises(ValueError, match="too long"):
                await call


def test_a_session_id_too_long_for_remes_image_file_name_is_refused(sample_copy):
    users = _jsonl(sample_copy / "data.jsonl")
    longest = "s" * (MAX_MESSAGE_ID_CHARS - len("-t5"))
    _session(users, "0_1")["session_id"] = longest  # turns 3 and 5 are images: both fit
    _session(users, "0_2")["session_id"] = longest[:-1] + "2x"  # one character more
    _write_jsonl(sample_copy / "data.jsonl", users)
    sid = longest[:-1] + "2x"
    assert _problems(sample_copy) == [
        f"data.jsonl:1 user 0 session {sid} turn {turn}: message id <session_id>-t<turn> is "
        f"{MAX_MESSAGE_ID_CHARS + 1} characters, more than the {MAX_MESSAGE_ID_CHARS} that fit in the name of the "
        "file ReMe saves the image as (msg-<hex of the id>-image-1.<ext>, 255 bytes at most)"
        for turn in (3, 5)]


@pytest.mark.parametrize(("value", "reason"), [
    ("CON", "is a Windows device name"),
    ("nul.1", "is a Windows device name"),
    ("Com7", "is a Windows device name"),
    ("lpt1.q.2", "is a Windows device name"),
    ("0_1.", "must not end with '.'"),
    ("0_1..", "must not end with '.'"),
])
def test_ids_that_remes_file_names_refuse_are_refused(sample_copy, value, reason):
    from reme.steps.file_io import validate_filename_component

    assert validate_filename_component(value) is not None  # ReMe would fail mid-run on it
    users = _jsonl(sample_copy / "data.jsonl")
    _session(users, "0_3")["session_id"] = value
    _write_jsonl(sample_copy / "data.jsonl", users)
    questions = _jsonl(sample_copy / "questions.jsonl")
    questions[1]["questions"][2]["question_id"] = value
    _write_jsonl(sample_copy / "questions.jsonl", questions)
    problems = _problems(sample_copy)
    assert [p.split(": ")[0:2] for p in problems] == [
        [f"data.jsonl:1 user 0 session {value}", "sessions[2].session_id"],
        [f"questions.jsonl:2 user 1 question {value}", "questions[2].question_id"]]
    assert all(reason in p for p in problems), problems


@pytest.mark.parametrize("text", [" ", "\n\t ", "\u3000"])
def test_a_question_without_text_is_refused(sample_copy, text):
    """ReMe's answer job refuses an empty query ("Error: query cannot be empty") after the agent starts."""
    questions = _jsonl(sample_copy / "questions.jsonl")
    questions[1]["questions"][0]["question"] = text
    _write_jsonl(sample_copy / "questions.jsonl", questions)
    [problem] = _problems(sample_copy)
    assert problem == ("questions.jsonl:2 user 1 question 1_q_1: questions[0].question: has no text (only whitespace): "
                       f"ReMe's answer job refuses an empty query (got {text!r})")


def test_a_session_with_more_images_than_the_candidate_holds_is_refused(sample_root):
    assert len(load_dataset(sample_root, max_session_images=2).users) == 3
    problems = _problems(sample_root, max_session_images=1)
    assert len(problems) == 12  # every session of the sample has 2 image turns
    assert problems[0] == ("data.jsonl:1 user 0 session 0_1: has 2 images, more than the candidate's max_images (1): "
                           "ReMe's auto_memory would refuse the session")


# ---------------------------------------------------------------- images that do not decode


def _noisy(fmt: str) -> bytes:
    pixels = np.random.default_rng(0).integers(0, 255, (64, 96, 3), dtype=np.uint8)
    image = Image.fromarray(pixels)
    out = io.BytesIO()
    if fmt == "MPO":
        image.save(out, format="MPO", save_all=True, append_images=[image.rotate(90)])
    else:
        (image.convert("P") if fmt == "GIF" else image).save(out, format=fmt)
    return out.getvalue()


def corrupt_middle(data: bytes, fill: str = "random") -> bytes:
    """`data` with its middle fifth overwritten: header and end marker intact."""
    start, end = len(data) * 2 // 5, len(data) * 3 // 5
    garbage = random.Random(7).randbytes(end - start) if fill == "random" else b"\xff" * (end - start)
    return data[:start] + garbage + data[end:]


CORRUPTED = {  # format: (file of the sample it replaces, fill) — libwebp decodes random garbage
    "JPEG": ("0_event_1_1.png", "random"), "PNG": ("0_event_1_2.png", "random"),
    "MPO": ("0_event_2_1.jpg", "random"), "GIF": ("0_event_2_2.png", "random"), "WEBP": ("0_event_3_1.png", "ff"),
}


def test_well_framed_images_that_do_not_decode_are_refused_one_line_each(sample_copy):
    users = _jsonl(sample_copy / "data.jsonl")
    expected = []
    for fmt, (name, fill) in CORRUPTED.items():
        [path] = (sample_copy / "image" / "uid0").rglob(name)
        path.write_bytes(corrupt_middle(_noisy(fmt), fill))
        sid, turn = next((s["session_id"], t) for s in users[0]["sessions"] for t in s["dialogue"]
                         if t.get("image_inline", "").endswith(name))
        expected.append(f"data.jsonl:1 user 0 session {sid} turn {turn['turn']}: image {turn['image_inline']!r} "
                        f"is a corrupt {fmt} file: {name} ")
    del _session(users, "2_1")["event_end_time"]  # listed together with the others
    _write_jsonl(sample_copy / "data.jsonl", users)
    problems = _problems(sample_copy)
    assert problems[0].startswith("data.jsonl:3 user 2 session 2_1: sessions[0].event_end_time: field required")
    assert len(problems) == 1 + len(expected), problems
    for prefix in expected:  # in the order sessions are ingested (by start time)
        assert sum(p.startswith(prefix) for p in problems) == 1, (prefix, problems)


def test_every_problem_of_this_kind_is_listed_together(sample_copy):
    users = _jsonl(sample_copy / "data.jsonl")
    _session(users, "0_4")["dialogue"] = []
    _session(users, "1_1")["dialogue"][1]["content"] = "y" * (MAX_TURN_TEXT_CHARS + 5)
    _session(users, "1_2")["session_id"] = "0_2"
    _session(users, "2_4")["session_id"] = "AUX"
    _session(users, "2_1")["dialogue"][3]["turn"] = 1
    _write_jsonl(sample_copy / "data.jsonl", users)
    questions = _jsonl(sample_copy / "questions.jsonl")
    questions[2]["questions"][4]["question_id"] = "0_q_2"
    _write_jsonl(sample_copy / "questions.jsonl", questions)
    [path] = (sample_copy / "image" / "uid1").rglob("1_event_3_1.png")
    path.write_bytes(corrupt_middle(_noisy("PNG")))
    problems = _problems(sample_copy)
    fragments = ["user 0 session 0_4: sessions[3].dialogue: is empty", "user 1 session 1_1 turn 2: content is",
                 "user 1 session 0_2: session id '0_2' repeats", "user 2 session AUX: sessions[3].session_id: is a "
                 "Windows device name", "user 2 session 2_1 turn 1: turn number repeats",
                 "questions.jsonl:3 user 2 question 0_q_2: question id '0_q_2' repeats",
                 "user 1 session 1_3 turn 3: image 'image/uid1/camera photos/1_event_3_1.png' is a corrupt PNG file"]
    assert len(problems) == len(fragments), problems
    for fragment in fragments:
        assert sum(fragment in p for p in problems) == 1, (fragment, problems)
