import hashlib

from mobilemem import qa_template
from mobilemem.prompts import PROMPT_NAMES, prompt, prompt_hashes

def test_official_template_is_shipped_verbatim(shared_reference):
    assert prompt("qa_text_memory") == (shared_reference / "mobilemem_qa_text_memory.txt").read_text(encoding="utf-8")


def test_render_fills_both_placeholders_once():
    text = qa_template.render("Which colour? [Question] [Retrieved Memories]")
    assert text.startswith("Question:\nWhich colour? [Question] [Retrieved Memories]\n")
    assert prompt("answer_tools").strip() in text
    assert text.count("[Retrieved Memories]") == 1  # only the one inside the question text


def test_hashes_cover_every_frozen_prompt():
    hashes = prompt_hashes()
    assert set(hashes) == set(PROMPT_NAMES)
    assert hashes["answer_system"] == hashlib.sha256(prompt("answer_system").encode()).hexdigest()
