"""Ingest through ReMe's auto_memory: the messages of DESIGN §4.1, ReMe's files, one attempt."""

import base64
import hashlib
import io
import json
import re

import frontmatter
from agentscope.message import DataBlock, TextBlock
from PIL import Image

from conftest import MARKER
from mobilemem import usage
from mobilemem.dataset import load_dataset
from mobilemem.reme.ingest import ingest_session, session_messages
from mobilemem.simulator import FaultRule


def _user_text(body: dict) -> str:
    content = next(m for m in body["messages"] if m["role"] == "user")["content"]
    return "\n".join(p["text"] for p in content if p["type"] == "text")


def _first_request(ingested, session_id: str):
    return next(r for r in ingested.requests if f"Session ID: {session_id}\n" in _user_text(r.body))


def test_every_session_succeeds_with_the_note_reme_reports(ingested):
    sessions = [s for u in ingested.dataset.users for s in u.sessions]
    assert set(ingested.responses) == {s.session_id for s in sessions}
    for session in sessions:
        response = ingested.responses[session.session_id]
        assert response.success and response.created and response.answer
        assert response.note_path.startswith(f"daily/{session.event_start_time[:10]}/")
        state = ingested.workspaces[session.user_id] / response.trajectory_path
        prompt = json.dumps(f"Session ID: {session.session_id}\n")[1:-1]  # as it stands in the JSON line
        assert response.trajectory_path.startswith("mem_session/agentscope/") and prompt in state.read_text()


def test_remes_transcript_carries_the_dataset_times_only(ingested):
    session = ingested.dataset.users[1].sessions[0]
    lines = (ingested.workspaces[1] / "session" / "dialog" / f"{session.session_id}.jsonl").read_text().splitlines()
    stamps = {m.group(1) for line in lines for m in re.finditer(r'"(?:created|finished)_at":"([^"]+)"', line)}
    assert stamps == {session.event_start_time}  # no wall-clock time, so two runs write the same file
    assert [json.loads(line)["id"] for line in lines] == [f"{session.session_id}-t{t.turn}" for t in session.turns]


def test_the_messages_are_the_turns_verbatim_with_their_images(ingested):
    dataset = ingested.dataset
    session = dataset.users[0].sessions[0]
    messages = session_messages(session, dataset.root)
    assert [m.id for m in messages] == [f"{session.session_id}-t{t.turn}" for t in session.turns]
    for message, turn in zip(messages, session.turns, strict=True):
        assert (message.role, message.name, message.created_at) == (turn.role, turn.role, session.event_start_time)
        if turn.image is None:
            assert [b.text for b in message.content if isinstance(b, TextBlock)] == [turn.text]
            continue
        text, image = message.content
        assert isinstance(text, TextBlock) and text.text == f"Image ID: {turn.image.image_id}"
        assert isinstance(image, DataBlock)
        original = dataset.path_of(turn.image).read_bytes()
        assert base64.b64decode(image.source.data) == original  # not resized, not re-encoded


def test_reme_saved_every_image_unchanged_and_cited_it(ingested):
    dataset = ingested.dataset
    for user in dataset.users:
        workspace = ingested.workspaces[user.user_id]
        for session in user.sessions:
            images = [t.image for t in session.turns if t.image]
            saved = sorted((workspace / "session" / "images" / session.session_id).iterdir())
            assert len(saved) == len(images)
            for image in images:
                original = dataset.path_of(image).read_bytes()
                if image.format == "MPO":  # sent (and so saved) as the PNG of its first frame
                    match = [p for p in saved if Image.open(p).format == "PNG" and Image.open(p).tobytes()
                             == Image.open(io.BytesIO(original)).convert("RGB").tobytes()]
                else:
                    match = [p for p in saved if hashlib.sha256(p.read_bytes()).digest()
                             == hashlib.sha256(original).digest()]
                assert len(match) == 1
            post = frontmatter.loads((workspace / ingested.responses[session.session_id].note_path).read_text())
            assert post["session_id"] == session.session_id and len(post["source_images"]) == len(images)


def test_the_model_sees_each_image_after_its_image_id_and_source(ingested):
    session = ingested.dataset.users[0].sessions[0]
    content = next(m for m in _first_request(ingested, session.session_id).body["messages"]
                   if m["role"] == "user")["content"]
    images = [t.image for t in session.turns if t.image]
    parts = [i for i, p in enumerate(content) if p["type"] == "image_url"]
    assert len(parts) == len(images)
    for index, image in zip(parts, images, strict=True):
        before = content[index - 1]["text"].rstrip().splitlines()
        assert before[-2] == f"Image ID: {image.image_id}"
        assert before[-1].startswith(f"Image source: [[session/images/{session.session_id}/msg-")


def test_sessions_arrive_in_chronological_order_each_with_a_fresh_agent(ingested):
    firsts = [r for r in ingested.requests if not any(m["role"] == "assistant" for m in r.body["messages"])]
    order = [_user_text(r.body).split("Session ID: ", 1)[1].split("\n", 1)[0] for r in firsts]
    assert order == [s.session_id for u in ingested.dataset.users for s in u.sessions]


def test_no_reference_or_generator_field_reaches_the_model(ingested):
    assert ingested.requests
    assert not [r.id for r in ingested.requests if MARKER in json.dumps(r.body, ensure_ascii=False)]


def test_every_ingest_request_was_observed(ingested):
    observed = [r for requests in ingested.observed.values() for r in requests]
    assert len(observed) == len(ingested.requests) and all(r.success for r in observed)
    assert sum(r.total_tokens for r in observed) == sum(r.usage["total_tokens"] for r in ingested.requests)


def test_auto_memory_gets_only_remes_daily_write_and_the_preset(ingested):
    for request in ingested.requests:
        assert [t["function"]["name"] for t in request.body["tools"]] == ["daily_write"]
        assert request.body["enable_thinking"] is True and request.body["temperature"] == 0.0
        assert request.body["stream"] is True and request.body["stream_options"] == {"include_usage": True}
        assert "<current-time>" not in json.dumps(request.body)


def test_the_index_counts_remes_chunks(ingested):
    for user in ingested.dataset.users:
        index = ingested.indexes[user.user_id]
        # per session: its note, its transcript; per day: ReMe's day index
        assert index.documents >= 2 * len(user.sessions) and index.chunks >= index.documents


async def test_a_failed_model_call_is_a_failed_job_after_one_attempt(sim, sample_root, candidate_model, config,
                                                                    tmp_path):
    from mobilemem.reme import app as reme_app

    dataset = load_dataset(sample_root, users=[0])
    session = dataset.users[0].sessions[0]
    sim.faults = [FaultRule(role="ingest", contains="", kind="http_500")]
    app = await reme_app.open_user_app(tmp_path / "workspace", candidate_model, config.candidate)
    try:
        with usage.scope() as scope:
            response = await ingest_session(app, session, dataset.root)
    finally:
        await app.close()
    assert not response.success and "500" in response.answer and response.note_path is None
    assert len(sim.requests) == 1 and [r.status for r in scope.requests] == [500]
    assert usage.failure_category(scope.requests) == "HTTP 500"
    assert not list((tmp_path / "workspace" / "daily").rglob("*.md"))
