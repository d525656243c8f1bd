"""Preflight rules for records that would only fail later (mid-run) or could mix users: ids unique
across the whole dataset, sessions with turns, bounded turn text, ids ReMe accepts as file names,
turn numbers and message ids ReMe can store, and images whose sent picture decodes in full.

Every test writes real files into a private copy of the sample (`sample_copy`) and checks the
problem lines `load_dataset` reports: one printable line each, all of them at once.
"""

import base64
import io
import json
import os
import random
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mobilemem.dataset import load_dataset
from mobilemem.dataset_checks import MAX_MESSAGE_ID_CHARS, MAX_TURN_TEXT_CHARS
from mobilemem.message_ids import message_id
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
    sid = longest[:-1] + "2x"  # one character more
    _session(users, "0_1")["session_id"] = longest  # turns 3 and 5 are images: both fit
    _session(users, "0_2")["session_id"] = sid
    _write_jsonl(sample_copy / "data.jsonl", users)
    questions = _jsonl(sample_copy / "questions.jsonl")
    for item in (item for q in questions[0]["questions"] for item in q["evidence"]):  # the evidence follows
        item["session_id"] = {"0_1": longest, "0_2": sid}.get(item["session_id"], item["session_id"])
    _write_jsonl(sample_copy / "questions.jsonl", questions)
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


# ---------------------------------------------------------------- text that cannot be encoded as UTF-8

SURROGATE = "\ud800"  # legal JSON ("\ud800"), half of a UTF-16 pair: no file or request can hold it
NOT_UTF8 = ("cannot be encoded as UTF-8: a lone surrogate \\ud800 at character {} (half of a UTF-16 pair, such as a "
            "cut emoji)")


def test_text_that_cannot_be_encoded_as_utf8_is_refused_in_every_field_at_once(sample_copy):
    """Each field reaches a file or a request: job.json and the answer request (question), the judge's
    request and fingerprint (answers, evidence), results.jsonl and summary.json (difficulty,
    language, format), ReMe's notes and the memory fingerprint (turns, image ids, session times)."""
    questions = _jsonl(sample_copy / "questions.jsonl")
    first, third = questions[0]["questions"], questions[2]["questions"]
    first[0]["question"] = "Which digit?" + SURROGATE
    first[1]["answer"] = ["purple", SURROGATE]
    first[2]["evidence"][0]["explanation"]["image"] = SURROGATE + " a photo"
    first[3]["difficulty"] = "hard" + SURROGATE
    first[4]["language"] = SURROGATE
    first[5]["question_format"] = "open" + SURROGATE
    third[0]["question_id"] = "2_q_1" + SURROGATE
    third[1]["answer"] = "blue" + SURROGATE
    third[2]["evidence"][0][SURROGATE] = "an unknown field"
    third[3]["question_type"] = SURROGATE
    _write_jsonl(sample_copy / "questions.jsonl", questions)
    users = _jsonl(sample_copy / "data.jsonl")
    _session(users, "0_1")["dialogue"][0]["content"] = "Today" + SURROGATE
    reference = _session(users, "1_2")["dialogue"][2]["image_inline"]
    _session(users, "1_2")["dialogue"][2]["image_inline"] += SURROGATE  # user 1 is scheduled: its images are checked
    _session(users, "1_3")["event_start_time"] += SURROGATE
    _session(users, "2_2")["session_id"] = SURROGATE
    _write_jsonl(sample_copy / "data.jsonl", users)
    problems = _problems(sample_copy)
    assert problems == [
        "data.jsonl:2 user 1 session 1_3: sessions[2].event_start_time: " + NOT_UTF8.format(20)
        + " (got '2024-03-24 19:15:00\\ud800')",
        "data.jsonl:3 user 2 session #2: sessions[1].session_id: " + NOT_UTF8.format(1) + " (got '\\ud800')",
        "questions.jsonl:1 user 0 question 0_q_1: questions[0].question: " + NOT_UTF8.format(13)
        + " (got 'Which digit?\\ud800')",
        "questions.jsonl:1 user 0 question 0_q_2: questions[1].answer: [1] " + NOT_UTF8.format(1),
        "questions.jsonl:1 user 0 question 0_q_3: questions[2].evidence[0]: explanation.image " + NOT_UTF8.format(1),
        "questions.jsonl:1 user 0 question 0_q_4: questions[3].difficulty: " + NOT_UTF8.format(5)
        + " (got 'hard\\ud800')",
        "questions.jsonl:1 user 0 question 0_q_5: questions[4].language: " + NOT_UTF8.format(1) + " (got '\\ud800')",
        "questions.jsonl:1 user 0 question 0_q_6: questions[5].question_format: " + NOT_UTF8.format(5)
        + " (got 'open\\ud800')",
        "questions.jsonl:3 user 2 question #1: questions[0].question_id: " + NOT_UTF8.format(6)
        + " (got '2_q_1\\ud800')",
        "questions.jsonl:3 user 2 question 2_q_2: questions[1].answer: " + NOT_UTF8.format(5) + " (got 'blue\\ud800')",
        "questions.jsonl:3 user 2 question 2_q_3: questions[2].evidence[0]: key ['\\ud800'] " + NOT_UTF8.format(1),
        "questions.jsonl:3 user 2 question 2_q_4: questions[3].question_type: " + NOT_UTF8.format(1)
        + " (got '\\ud800')",
        "data.jsonl:1 user 0 session 0_1 turn 1: content " + NOT_UTF8.format(6),
        f"data.jsonl:2 user 1 session 1_2 turn 3: image reference {reference + SURROGATE!r} "
        + NOT_UTF8.format(len(reference) + 1),
    ]


def test_a_valid_pair_of_surrogate_escapes_is_one_character_and_accepted(sample_copy):
    questions = _jsonl(sample_copy / "questions.jsonl")
    questions[0]["questions"][0]["question"] += " \U0001F600"
    (sample_copy / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    assert "\\ud83d\\ude00" in (sample_copy / "questions.jsonl").read_text(encoding="utf-8")  # ensure_ascii escapes it
    job = load_dataset(sample_copy).users[0].questions[0]
    assert job.question.endswith(" \U0001F600")


def test_an_image_whose_folder_is_not_utf8_on_disk_is_refused(sample_copy):
    """The resolved path is written to the run's files (the memory fingerprint, errors.jsonl)."""
    folder = os.path.join(os.fsencode(sample_copy / "image" / "uid0"), b"fotos\xff")
    os.mkdir(folder)
    [path] = (sample_copy / "image" / "uid0").rglob("0_event_1_1.png")
    path.rename(os.fsdecode(os.path.join(folder, b"0_event_1_1.png")))
    assert _problems(sample_copy) == [
        "data.jsonl:1 user 0 session 0_1 turn 3: image 'image/uid0/camera photos/0_event_1_1.png' resolves to "
        "image/uid0/fotos\\udcff/0_event_1_1.png, whose path is not UTF-8"]


# ---------------------------------------------------------------- evidence names the user's sessions


def test_evidence_naming_a_session_the_user_does_not_have_is_refused(sample_copy):
    """Attribution looks for the evidence sessions among the user's own (another user's is no better)."""
    questions = _jsonl(sample_copy / "questions.jsonl")
    questions[0]["questions"][0]["evidence"][0]["session_id"] = "0_9"
    questions[1]["questions"][4]["evidence"][1]["session_id"] = "2_1"  # a question that is not evaluated
    questions[2]["questions"][0]["evidence"][0]["session_id"] = "2_1\n" + "x" * 300
    questions[2]["questions"][1]["evidence"][0]["session_id"] = None  # names no session: nothing to check
    del questions[2]["questions"][2]["evidence"][0]["session_id"]
    _write_jsonl(sample_copy / "questions.jsonl", questions)
    assert _problems(sample_copy) == [
        "questions.jsonl:1 user 0 question 0_q_1: questions[0].evidence[0].session_id: names session '0_9', which "
        "user 0 does not have in data.jsonl",
        "questions.jsonl:2 user 1 question 1_q_5: questions[4].evidence[1].session_id: names session '2_1', which "
        "user 1 does not have in data.jsonl",
        "questions.jsonl:3 user 2 question 2_q_1: questions[0].evidence[0].session_id: names session "
        f"{('2_1' + chr(10) + 'x' * 196)!r}... (304 characters), which user 2 does not have in data.jsonl",
    ]


def test_evidence_is_not_checked_against_a_user_whose_session_ids_are_invalid(sample_copy):
    users = _jsonl(sample_copy / "data.jsonl")
    _session(users, "0_1")["session_id"] = "0 1"
    _write_jsonl(sample_copy / "data.jsonl", users)
    [problem] = _problems(sample_copy)  # not also the evidence naming 0_1
    assert problem.startswith("data.jsonl:1 user 0 session #1: sessions[0].session_id: must be 1-128 letters")
