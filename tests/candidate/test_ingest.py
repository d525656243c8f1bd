import base64
import hashlib
import io
import json

import yaml
from PIL import Image

from conftest import MARKER
from mobilemem import usage
from mobilemem.candidate.ingest import ingest_session
from mobilemem.candidate.memory_files import NoteContext, safe_note_name, write_note
from mobilemem.candidate.workspace import Workspace
from mobilemem.records import DialogLine
from mobilemem.simulator import FaultRule


def _user_message(body: dict) -> list[dict]:
    return next(m for m in body["messages"] if m["role"] == "user")["content"]


def test_every_session_succeeds_with_notes(ingested):
    sessions = [s for u in ingested.dataset.users for s in u.sessions]
    assert set(ingested.responses) == {s.session_id for s in sessions}
    for response in ingested.responses.values():
        assert response.success and response.finished_reason == "completed" and response.notes_written


def test_sessions_arrive_in_chronological_order_each_with_a_fresh_agent(ingested):
    first_requests = [r for r in ingested.requests if not any(m["role"] == "assistant" for m in r.body["messages"])]
    order = [_user_message(r.body)[0]["text"].split(",")[0] for r in first_requests]
    expected = [f"Session {s.session_id}" for u in ingested.dataset.users for s in u.sessions]
    assert order == expected  # one fresh conversation per session, in ingest order


def test_images_arrive_unchanged_right_after_their_image_id_line(ingested):
    dataset = ingested.dataset
    for user in dataset.users:
        for session in user.sessions:
            request = next(r for r in ingested.requests
                           if _user_message(r.body)[0]["text"].startswith(f"Session {session.session_id},"))
            parts = _user_message(request.body)
            images = [t.image for t in session.turns if t.image]
            image_parts = [i for i, p in enumerate(parts) if p["type"] == "image_url"]
            assert len(image_parts) == len(images)
            for index, image in zip(image_parts, images, strict=True):
                before = parts[index - 1]["text"].splitlines()[-1]
                assert before.endswith(f"Image ID: {image.image_id} (saved as session/images/"
                                       f"{session.session_id}/{before.rsplit('/', 1)[-1]}")
                sent = base64.b64decode(parts[index]["image_url"]["url"].split("base64,", 1)[1])
                original = dataset.path_of(image).read_bytes()
                if image.format == "MPO":
                    decoded = Image.open(io.BytesIO(sent))
                    assert decoded.format == "PNG"
                    assert decoded.tobytes() == Image.open(io.BytesIO(original)).convert("RGB").tobytes()
                else:
                    assert hashlib.sha256(sent).digest() == hashlib.sha256(original).digest()


def test_lines_are_numbered_by_turn_position_with_the_session_time(ingested):
    session = ingested.dataset.users[0].sessions[0]
    request = next(r for r in ingested.requests
                   if _user_message(r.body)[0]["text"].startswith(f"Session {session.session_id},"))
    text = "\n".join(p["text"] for p in _user_message(request.body) if p["type"] == "text")
    first = session.turns[0]
    assert f"[L1 | {first.role} @ {session.event_start_time}] {first.text}" in text
    assert f"[L{len(session.turns)} | " in text


def test_runner_written_files(ingested):
    user = ingested.dataset.users[1]
    ws = ingested.workspaces[user.user_id]
    for session in user.sessions:
        lines = [DialogLine.model_validate_json(raw)
                 for raw in (ws.dialog / f"{session.session_id}.jsonl").read_text().splitlines()]
        assert [line.line for line in lines] == list(range(1, len(session.turns) + 1))
        for line, turn in zip(lines, session.turns, strict=True):
            assert line.time == session.event_start_time
            assert line.text == turn.text
            if turn.image:
                assert line.image_id == turn.image.image_id and (ws.memory / line.saved_as).is_file()
        for note in ingested.responses[session.session_id].notes_written:
            front = yaml.safe_load((ws.memory / note).read_text().split("---\n")[1])
            assert note.startswith(f"daily/{session.event_start_time[:10]}/")
            assert front["session_id"] == session.session_id
            assert front["source_conversation"] == f"session/dialog/{session.session_id}.jsonl"
            assert len(front["source_images"]) == sum(1 for t in session.turns if t.image)
            digest = (ws.daily / f"{session.event_start_time[:10]}.md").read_text()
            assert note.removeprefix("daily/") in digest


def test_trajectories_are_native_and_carry_no_image_payload(ingested):
    ws = ingested.workspaces[0]
    for session in ingested.dataset.users[0].sessions:
        path = ws.root / ingested.responses[session.session_id].trajectory_path
        state = json.loads(path.read_text())
        assert {"context", "summary", "session_id"} <= set(state)
        text = path.read_text()
        assert "iVBORw0KGgo" not in text and "/9j/" not in text  # PNG / JPEG base64 heads
        assert '"saved_as": "session/images/' in text


def test_no_reference_or_generator_field_reaches_the_model(ingested):
    assert ingested.requests
    assert not [r.id for r in ingested.requests if MARKER in json.dumps(r.body, ensure_ascii=False)]


def test_every_ingest_request_was_observed(ingested):
    observed = [r for requests in ingested.observed.values() for r in requests]
    assert len(observed) == len(ingested.requests) and all(r.success for r in observed)
    assert sum(r.total_tokens for r in observed) == sum(r.usage["total_tokens"] for r in ingested.requests)


def test_note_names_are_safe_and_collisions_get_suffixes(tmp_path):
    ws = Workspace(tmp_path / "ws").create()
    context = NoteContext(date="2024-03-17", session_id="0_1", source_conversation="session/dialog/0_1.jsonl",
                          source_images=())
    assert safe_note_name("../../etc/passwd") == "etc-passwd"
    assert safe_note_name("  ") == "note" and safe_note_name("Kayak 日记!") == "kayak-日记"
    paths = [write_note(ws, context, "../x", "d", "c") for _ in range(3)]
    assert paths == ["daily/2024-03-17/x.md", "daily/2024-03-17/x-2.md", "daily/2024-03-17/x-3.md"]
    assert all((ws.memory / p).resolve().is_relative_to(ws.memory.resolve()) for p in paths)


async def test_a_failed_model_call_is_a_failed_response_not_an_exception(sim, sample_root, candidate_model,
                                                                         config, tmp_path):
    from mobilemem.dataset import load_dataset

    dataset = load_dataset(sample_root, users=[0])
    session = dataset.users[0].sessions[0]
    ws = Workspace(tmp_path / "ws").create()
    sim.faults = [FaultRule(role="ingest", contains="", kind="http_500")]
    with usage.scope() as scope:
        response = await ingest_session(session, dataset.root, ws, candidate_model, config.candidate)
    assert not response.success and "500" in response.error and response.notes_written == []
    assert len(sim.requests) == 1 and [r.status for r in scope.requests] == [500]
    assert (ws.dialog / f"{session.session_id}.jsonl").is_file()  # the runner's own files are kept


def test_auto_memory_gets_only_daily_write(ingested):
    for request in ingested.requests:
        assert [t["function"]["name"] for t in request.body["tools"]] == ["daily_write"]
        assert "enable_thinking" in request.body and request.body["temperature"] == 0.0
