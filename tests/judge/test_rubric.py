import pytest

from mobilemem.dataset import JudgeQuestion
from mobilemem_judge import RUBRICS, fill, rubric_text


def _question(answer, evidence) -> JudgeQuestion:
    return JudgeQuestion(user_id=0, question_id="0_q_1", question="What colour?", answer=answer, evidence=evidence,
                         question_type="visual_reasoning", question_format="open", difficulty="easy", language="en")


def test_rubrics_are_shipped_byte_for_byte(shared_reference):
    omni = (shared_reference / "membase_mobilemem_omni_judge.txt").read_bytes()
    assert rubric_text("mobilemem-omni-judge").encode() == omni
    assert rubric_text("mobilemem-llm-judge").encode() == (shared_reference / "mobilemem_llm_judge.txt").read_bytes()
    with pytest.raises(KeyError):
        rubric_text("nope")


def test_fill_single_answer_and_dict_evidence_as_membase_does():
    evidence = [{"event_id": "0_e_1", "explanation": {"image": "a red photo", "context": "at the lake"}},
                {"event_id": "0_e_2", "explanation": "plain text"}]
    text = fill("mobilemem-omni-judge", _question("red", evidence), "The colour is red.")
    assert "Question: What colour?\nGold answer: red\n" in text
    assert "Evidence: {'image': 'a red photo', 'context': 'at the lake'}\nplain text\n" in text
    assert "Generated answer: The colour is red.\n" in text
    assert "$" not in text.replace("$1", "")


def test_fill_several_answers_and_no_evidence():
    text = fill("mobilemem-omni-judge", _question(["9", "nine"], []), "9")
    assert "Gold answer: [9, nine]\nEvidence: Not provided.\n" in text


def test_prediction_text_is_never_substituted_again():
    text = fill("mobilemem-omni-judge", _question("x", []), "$question ${evidence} [Question]")
    assert "Generated answer: $question ${evidence} [Question]" in text


def test_the_alternative_rubric_fills_its_placeholders():
    text = fill("mobilemem-llm-judge", _question("red", []), "blue")
    assert "Question: What colour?\nGold answer: red\nEvidence: Not provided.\nGenerated answer: blue" in text
    assert set(RUBRICS) == {"mobilemem-omni-judge", "mobilemem-llm-judge"}
