"""Evidence attribution: images the agent read mapped back to the dataset's Image IDs, and the three
rules by which a search hit points into an evidence session."""

from mobilemem.dataset import CandidateImage, CandidateSession, CandidateTurn, JudgeQuestion
from mobilemem.message_ids import attachment_turn, message_id, parse_message_id
from mobilemem.records import ToolCallRecord
from mobilemem_judge.analysis.attribution import attribute


def _turn(turn: int, image_id: str | None = None, fmt: str = "PNG") -> CandidateTurn:
    if image_id is None:
        return CandidateTurn(turn=turn, role="user", text=f"text of turn {turn}")
    return CandidateTurn(turn=turn, role="user", image=CandidateImage(image_id=image_id, path="image/x", format=fmt))


SESSIONS = [
    CandidateSession(user_id=0, session_id="0_1", event_start_time="2024-03-17 17:15:00",
                     event_end_time="2024-03-17 18:00:00",
                     turns=[_turn(1), _turn(3, "image/uid0/camera photos/0_event_1_1.png"),
                            _turn(5, "image/uid0/camera photos/IMG_0042.JPG", fmt="MPO")]),
    CandidateSession(user_id=0, session_id="0_2", event_start_time="2024-03-18 09:00:00",
                     event_end_time="2024-03-18 10:00:00",
                     turns=[_turn(1), _turn(3, "image/uid0/event/0_event_2_1.jpg", fmt="JPEG")]),
]
NOTES = {"0_1": ["daily/2024-03-17/today-went-rock.md"], "0_2": ["daily/2024-03-18/picnic.md"]}


def _question(*evidence: tuple[str, str | None]) -> JudgeQuestion:
    return JudgeQuestion(user_id=0, question_id="0_q_1", question="Which digit?", answer="9",
                         evidence=[{"event_id": "e", "session_id": s, "image_path": p, "explanation": "x"}
                                   for s, p in evidence],
                         question_type="visual_reasoning", question_format=None, difficulty=None, language="en")


def _saved(session_id: str, turn: int, ext: str) -> str:
    """Where ReMe 0.4.2.0 saves the image of that turn (the hex of the message id, block 1)."""
    return f"session/images/{session_id}/msg-{f'{session_id}-t{turn}'.encode().hex()}-image-1{ext}"


def _read_image(path: str, ok: bool = True) -> ToolCallRecord:
    return ToolCallRecord(name="read_image", ok=ok, arguments={"path": path},
                          result=f"Image {path}:" if ok else None, error=None if ok else "no such file")


def _search(*hits: tuple[str, str]) -> ToolCallRecord:
    text = "\n".join(f"========== {path} [score=7.9249] ==========\n{body}" for path, body in hits)
    return ToolCallRecord(name="bm25_search", ok=True, arguments={"query": "q"}, result=text)


def test_message_ids_round_trip_and_name_remes_attachments():
    assert message_id("0_1", 3) == "0_1-t3"
    assert parse_message_id("0_1-t3") == ("0_1", 3)
    assert parse_message_id("0_1-text") is None and parse_message_id("0_1") is None
    assert attachment_turn("session/images/0_1/msg-305f312d7433-image-1.jpg") == ("0_1", 3)
    assert attachment_turn("session/dialog/0_1.jsonl") is None
    assert attachment_turn("session/images/0_1/msg-zz-image-1.jpg") is None


def test_an_image_read_maps_to_its_turn_and_matches_evidence_across_a_folder_alias():
    question = _question(("0_1", "image/uid0/camera_photos/0_event_1_1.png"))  # the archive's folder name
    record = attribute(question, [_read_image(_saved("0_1", 3, ".png"))], SESSIONS, NOTES, "CORRECT")
    [read] = record.images_read
    assert (read.session_id, read.turn, read.image_id) == ("0_1", 3, "image/uid0/camera photos/0_event_1_1.png")
    assert read.evidence and record.opened_evidence_image
    assert record.evidence_sessions == ["0_1"] and record.evidence_images == ["image/uid0/camera_photos/0_event_1_1.png"]


def test_an_mpo_saved_as_png_still_maps_to_its_original_jpg():
    question = _question(("0_1", "image/uid0/chat_images/IMG_0042.JPG"))
    calls = [_read_image(_saved("0_1", 3, ".png")), _read_image(_saved("0_1", 5, ".png"))]
    record = attribute(question, calls, SESSIONS, NOTES, "WRONG")
    assert [(r.call, r.turn, r.evidence) for r in record.images_read] == [(0, 3, False), (1, 5, True)]
    assert record.images_read[1].image_id == "image/uid0/camera photos/IMG_0042.JPG"
    assert record.opened_evidence_image and record.label == "WRONG"


def test_other_images_failed_reads_and_text_reads_open_no_evidence():
    question = _question(("0_1", "image/uid0/camera photos/0_event_1_1.png"))
    calls = [_read_image(_saved("0_2", 3, ".jpg")),  # another session's image
             _read_image(_saved("0_1", 3, ".png"), ok=False),
             ToolCallRecord(name="read", ok=True, arguments={"path": _saved("0_1", 3, ".png")}, result="...")]
    record = attribute(question, calls, SESSIONS, NOTES, "WRONG")
    assert [(r.session_id, r.evidence) for r in record.images_read] == [("0_2", False)]
    assert not record.opened_evidence_image


def test_the_three_hit_rules_and_a_hit_elsewhere():
    question = _question(("0_1", "image/uid0/camera photos/0_event_1_1.png"))
    rules = {
        "dialog": ("session/dialog/0_1.jsonl:1-8", "[user @ 2024-03-17 17:15:00] Today I went rock climbing"),
        "note": ("daily/2024-03-17/today-went-rock.md:10-13", "Key words: Today, went, rock"),
        "image": ("daily/2024-03-17.md:5-8",
                  f"- [[daily/2024-03-17/x.md]] source_images: ['[[{_saved('0_1', 3, '.jpg')}]]']"),
    }
    for rule, hit in rules.items():
        record = attribute(question, [_search(hit)], SESSIONS, NOTES, "CORRECT")
        [found] = record.evidence_hits
        assert (found.rules, found.sessions, found.call) == ([rule], ["0_1"], 0)
        assert found.path == hit[0].rsplit(":", 1)[0] and found.lines == hit[0].rsplit(":", 1)[1]
        assert record.retrieved_evidence_session
    elsewhere = [("session/dialog/0_2.jsonl:1-4", "picnic"), ("daily/2024-03-18/picnic.md:1-3", "picnic"),
                 ("daily/2024-03-18.md:1-2", f"[[{_saved('0_2', 3, '.jpg')}]]")]
    record = attribute(question, [_search(*elsewhere)], SESSIONS, NOTES, "WRONG")
    assert record.evidence_hits == [] and not record.retrieved_evidence_session


def test_one_search_result_with_several_hits_keeps_each_hit_apart():
    question = _question(("0_2", "image/uid0/event/0_event_2_1.jpg"))
    result = _search(("session/dialog/0_1.jsonl:1-8", "rock climbing"), ("session/dialog/0_2.jsonl:3-5", "picnic"))
    record = attribute(question, [_read_image(_saved("0_1", 3, ".png")), result], SESSIONS, NOTES, "WRONG")
    assert [(h.call, h.path, h.lines) for h in record.evidence_hits] == [(1, "session/dialog/0_2.jsonl", "3-5")]
    assert record.retrieved_evidence_session and not record.opened_evidence_image  # a retrieved, unopened case


def test_a_question_without_evidence_images_opens_none():
    question = _question(("0_1", None), ("0_2", None))
    calls = [_search(("session/dialog/0_2.jsonl:1-4", "picnic")), _read_image(_saved("0_1", 3, ".png"))]
    record = attribute(question, calls, SESSIONS, NOTES, "CORRECT")
    assert record.evidence_images == [] and record.evidence_sessions == ["0_1", "0_2"]
    assert [r.evidence for r in record.images_read] == [False] and not record.opened_evidence_image
    assert record.retrieved_evidence_session
