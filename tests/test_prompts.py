import hashlib

from reme.components.prompt_handler import PromptHandler

from mobilemem import qa_template
from mobilemem.prompts import FROZEN_TEXTS, frozen_hashes, frozen_text
from mobilemem.reme.answer_step import AgenticAnswerStep


def test_official_templates_are_shipped_verbatim(shared_reference):
    for name in ("qa_text_memory.txt", "qa_multimodal_memory.txt"):
        official = (shared_reference / f"mobilemem_{name}").read_text(encoding="utf-8")
        assert frozen_text(f"prompts/{name}") == official


def test_render_fills_both_placeholders_once():
    text = qa_template.render("Which colour? [Question] [Retrieved Memories]", "MEMORY TOOLS")
    assert text.startswith("Question:\nWhich colour? [Question] [Retrieved Memories]\n")
    assert "\nMEMORY TOOLS\nAnswer Rules:" in text
    assert text.count("[Retrieved Memories]") == 1  # only the one inside the question text


def test_the_answer_step_reads_its_prompts_from_the_frozen_yaml():
    prompts = PromptHandler(language="").load_prompt_by_class(AgenticAnswerStep)
    assert prompts.get_prompt("memory_tools") in frozen_text("reme/answer_step.yaml").replace("\n  ", "\n")
    assert "read_image(path)" in prompts.get_prompt("memory_tools")


def test_hashes_cover_every_frozen_text_each_candidate_sends():
    hashes = frozen_hashes()
    assert set(hashes) == {"prompts/qa_text_memory.txt", "reme/plugin.yaml", "reme/answer_step.yaml"}
    assert set(frozen_hashes("no-memory")) == {"prompts/qa_text_memory.txt"}
    assert set(frozen_hashes("bm25-rag")) == {"prompts/qa_multimodal_memory.txt"}
    assert set(FROZEN_TEXTS) == set(hashes) | {"prompts/qa_multimodal_memory.txt"}
    assert hashes["reme/plugin.yaml"] == hashlib.sha256(frozen_text("reme/plugin.yaml").encode()).hexdigest()
