"""The baselines' parts without a model: the exact no-memory text, the bm25-rag transcript chunks,
its CJK-aware tokens, its one-pass template, its retrieval and request content (images not
resized, an MPO as PNG, the image cap), and the simulator's policy for their one request."""

import asyncio
import base64
import io

from agentscope.message import DataBlock, TextBlock

from mobilemem.baselines.bm25_rag import Bm25Rag
from mobilemem.candidate_tools import render_multimodal as render
from mobilemem.baselines.no_memory import message_text
from mobilemem.baselines.transcript import session_chunks, tokens
from mobilemem.config import load_config
from mobilemem.dataset import CandidateQuestion, load_dataset
from mobilemem.simulator import plain_qa, policy
from mobilemem.simulator.pixels import CANNOT_TELL
from mobilemem.simulator.vision import draw_fact


def test_no_memory_sends_the_official_template_with_empty_memories():
    expected = ("Question:\nWhat colour was it?\nPlease answer the question based on the following memories:\n\n"
                "Answer Rules:\n1. If options are provided in the question, use the original option text as your "
                "answer.\n2. For multiple-choice questions (multiple-select), select all correct options.\n"
                "3. For open-ended questions, respond freely.\n")
    assert message_text("What colour was it?") == expected


def test_tokens_are_words_and_cjk_characters_with_their_pairs():
    assert tokens("Rock-climbing at Lake Geneva, 2024!") == ["rock", "climbing", "at", "lake", "geneva", "2024"]
    assert tokens("我去野餐 at 桌山") == ["我", "去", "野", "餐", "我去", "去野", "野餐", "at", "桌", "山", "桌山"]


def test_chunks_keep_turns_of_one_session_and_name_its_images(sample_root):
    session = load_dataset(sample_root).users[0].sessions[0]
    chunks = session_chunks(session, 3, first_id=10)
    assert [c.chunk_id for c in chunks] == [10, 11, 12]
    assert [(c.first_turn, c.last_turn) for c in chunks] == [(1, 3), (4, 6), (7, 8)]
    assert {c.session_id for c in chunks} == {session.session_id}
    assert chunks[0].text.endswith(f"\n[user @ {session.event_start_time}] Image ID: {chunks[0].images[0].image_id}")
    assert chunks[0].text.startswith(f"[user @ {session.event_start_time}] {session.turns[0].text}")
    image_turns = [t.turn for t in session.turns if t.image]
    assert [i.turn for c in chunks for i in c.images] == image_turns


def test_the_multimodal_template_is_filled_in_one_pass():
    before, after = render("Is [Timestamps] literal?", "memory [Question]", "2024-01-01 10:00:00")
    assert before == ("Question:\nIs [Timestamps] literal?\nPlease answer the question based on the following "
                      "memories:\nmemory [Question]\nThe following images are retrieved as potentially relevant "
                      "visual memories. The timestamps, in order, are:\n2024-01-01 10:00:00\n")
    assert after == ("\nAnswer Rules:\n1. If options are provided in the question, use the original option text as "
                     "your answer.\n2. For multiple-choice questions (multiple-select), select all correct options.\n"
                     "3. For open-ended questions, respond freely.\n")


def _rag(sample_root, tmp_path, **preset) -> tuple[Bm25Rag, object]:
    dataset = load_dataset(sample_root)
    config = load_config(overrides={"candidate": {"kind": "bm25-rag", **preset}})
    rag = Bm25Rag(model=None, preset=config.candidate, workspace=tmp_path, dataset_root=dataset.root)
    user = dataset.users[0]

    async def remember():
        for session in user.sessions:
            await rag.ingest_session(session, None)
        return await rag.build_index()

    built = asyncio.run(remember())
    assert (built.documents, built.chunks) == (len(user.sessions), len(rag.chunks))
    return rag, user


def test_retrieval_puts_the_matching_session_first_and_sends_its_images(sample_root, tmp_path):
    rag, user = _rag(sample_root, tmp_path)
    question = CandidateQuestion(user_id=0, question_id="q", question="What did I see rock climbing at Lake Geneva?")
    content, retrieval = rag._content(question)
    assert retrieval.chunks[0].session_id == user.sessions[0].session_id
    assert [c.score for c in retrieval.chunks] == sorted((c.score for c in retrieval.chunks), reverse=True)
    images = [b for b in content if isinstance(b, DataBlock)]
    assert len(images) == len(retrieval.images) and retrieval.images_left_out == 0
    labels = [content[i - 1].text for i, b in enumerate(content) if isinstance(b, DataBlock)]
    assert labels == [f"Image ID: {i.image_id}" for i in retrieval.images]
    turn = next(t for t in user.sessions[0].turns if t.image)
    first = base64.b64decode(images[0].source.data)
    assert first == (sample_root / turn.image.path).read_bytes() or images[0].source.media_type == "image/png"
    assert isinstance(content[0], TextBlock) and content[0].text.startswith("Question:\n")


def test_the_image_cap_leaves_the_lowest_ranked_images_out(sample_root, tmp_path):
    rag, _ = _rag(sample_root, tmp_path, max_images=1)
    question = CandidateQuestion(user_id=0, question_id="q", question="Lake Geneva rock climbing photo")
    _, retrieval = rag._content(question)
    assert len(retrieval.images) == 1 and retrieval.images_left_out > 0


def test_a_saved_index_is_loaded_when_the_memory_was_reused(sample_root, tmp_path):
    built, _ = _rag(sample_root, tmp_path)
    fresh = Bm25Rag(model=None, preset=built.preset, workspace=tmp_path, dataset_root=built.dataset_root)
    question = CandidateQuestion(user_id=0, question_id="q", question="kayaking at Lake Bled")
    assert fresh._content(question)[1] == built._content(question)[1]


def _qa_body(question: str, first_ids: list[str], images: dict[str, tuple[str, int]]) -> dict:
    memories = "Session s1 (t), turns 1-8:\n" + "\n".join(f"[user @ t] Image ID: {i}" for i in first_ids)
    parts = [{"type": "text", "text": f"Question:\n{question}\n{plain_qa.TEMPLATE_SENTENCE}\n{memories}\n\nSession s2"}]
    for image_id, (colour, digit) in images.items():
        buffer = io.BytesIO()
        draw_fact(colour, digit).save(buffer, format="PNG")
        parts += [{"type": "text", "text": f"Image ID: {image_id}"},
                  {"type": "image_url", "image_url": {"url": "data:image/png;base64,"
                                                             + base64.b64encode(buffer.getvalue()).decode()}}]
    return {"messages": [{"role": "user", "content": parts}]}


def test_the_simulator_answers_a_baseline_from_the_image_the_ordinal_picks():
    images = {"a.png": ("red", 3), "b.png": ("blue", 7), "other.png": ("green", 1)}
    body = _qa_body("Which digit was in the second photo I showed you?", ["a.png", "b.png"], images)
    assert policy.classify(body) == ("qa", False)
    assert policy.reply("qa", body).content == "The digit is 7."
    first = _qa_body("What colour was the first photo?", ["a.png", "b.png"], images)
    assert policy.reply("qa", first).content == "The colour is red."
    blind = _qa_body("What colour was the first photo?", [], {})
    assert policy.reply("qa", blind).content == CANNOT_TELL


def test_a_user_without_turns_retrieves_nothing_and_sends_no_image(sample_root, tmp_path):
    config = load_config(overrides={"candidate": {"kind": "bm25-rag"}})
    rag = Bm25Rag(model=None, preset=config.candidate, workspace=tmp_path, dataset_root=sample_root)
    assert asyncio.run(rag.build_index()).chunks == 0
    content, retrieval = rag._content(CandidateQuestion(user_id=0, question_id="q", question="anything?"))
    assert retrieval.chunks == [] and retrieval.images == []
    assert not [b for b in content if isinstance(b, DataBlock)]
    reused = Bm25Rag(model=None, preset=config.candidate, workspace=tmp_path, dataset_root=sample_root)
    assert reused._content(CandidateQuestion(user_id=0, question_id="q", question="anything?"))[1] == retrieval
