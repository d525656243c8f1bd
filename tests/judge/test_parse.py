"""The judge-reply parser (DESIGN §7): every row is a reply, the label or gap it gives, and the step
that decided (None: no step could)."""

import pytest

from mobilemem.config import load_config
from mobilemem.dataset import JudgeQuestion
from mobilemem.models import Endpoint
from mobilemem_judge import judge_settings, judgment_fingerprint, parse_label
from mobilemem_judge.parse import AMBIGUOUS, PARSER_VERSION, UNPARSEABLE, word_verdicts

CORRECT, WRONG = "CORRECT", "WRONG"
QUESTION = JudgeQuestion(user_id=0, question_id="0_q_1", question="What colour?", answer="red", evidence=[],
                         question_type="visual_reasoning", question_format="open", difficulty="easy", language="en")

TABLE = [
    # 1. the whole reply is JSON with a label
    ('{"label": "CORRECT"}', CORRECT, "json"),
    ('  {"label": "wrong"}\n', WRONG, "json"),
    ('{"label": " Correct "}', CORRECT, "json"),
    # 2. the first fenced or bare JSON object with a label: it wins over any words
    ('```json\n{"label": "WRONG"}\n```', WRONG, "embedded_json"),
    ('The answer names the same colour.\n{"label": "CORRECT"}', CORRECT, "embedded_json"),
    ('Reasoning: {"note": 1} then {"label": "WRONG"} and {"label": "CORRECT"}', WRONG, "embedded_json"),
    ('The generated answer is not correct, it says blue.\n{"label": "CORRECT"}', CORRECT, "embedded_json"),
    ('It looks correct at first, but it is wrong.\n```json\n{"label": "WRONG"}\n```', WRONG, "embedded_json"),
    # 3. words: WRONG / INCORRECT / INACCURATE, and negated CORRECT / RIGHT / ACCURATE
    ("The generated answer is CORRECT.", CORRECT, "words"),
    ("correct", CORRECT, "words"),
    ("INCORRECT", WRONG, "words"),
    ("The generated answer is wrong: it names blue.", WRONG, "words"),
    ("The answer is inaccurate.", WRONG, "words"),
    ("This is incorrect, not correct.", WRONG, "words"),
    ("The generated answer is not correct.", WRONG, "words"),
    ("The generated answer is NOT CORRECT.", WRONG, "words"),
    ("The generated answer isn't correct.", WRONG, "words"),
    ("The generated answer isn’t right.", WRONG, "words"),
    ("That is not right.", WRONG, "words"),
    ("The colour is not accurate.", WRONG, "words"),
    ("The answer does not appear to be accurate.", WRONG, "words"),
    ("It is not quite right, the digit differs.", WRONG, "words"),
    ("It cannot be considered correct.", WRONG, "words"),
    ("The answer is never correct for this question.", WRONG, "words"),
    ("Neither correct nor complete.", WRONG, "words"),
    ("It is not the correct digit.", WRONG, "words"),
    ("CORRECT or WRONG? WRONG.", WRONG, "words"),  # the labels named as alternatives are no verdict
    ("Is it correct/incorrect? It is correct.", CORRECT, "words"),
    ('{"label": "PARTIAL"} but overall correct', CORRECT, "words"),
    ("There is nothing wrong with it: correct.", CORRECT, "words"),  # a negated WRONG gives no verdict
    ("It is not only correct but complete.", CORRECT, "words"),  # "only" does not belong to a negation
    ("The sign is not on the right side, as the gold answer says: correct.", CORRECT, "words"),
    ("No, correct.", CORRECT, "words"),  # a comma ends a negation
    # both verdicts in words, no JSON label: a gap, decided by the words step
    ("The correct answer is red; the generated answer says blue, so it is wrong.", AMBIGUOUS, "words"),
    ("Partly correct, partly wrong.", AMBIGUOUS, "words"),
    ("CORRECT WRONG", AMBIGUOUS, "words"),
    ("It is correct. Actually, it is not correct.", AMBIGUOUS, "words"),
    ('The answer is right? No: {"label": "MAYBE"} correct and incorrect', AMBIGUOUS, "words"),
    # 4. nothing to read
    ("", UNPARSEABLE, None),
    (None, UNPARSEABLE, None),
    ("I am not sure.", UNPARSEABLE, None),
    ("CORRECTLY INCORRECTLY", UNPARSEABLE, None),
    ("The answer is not wrong.", UNPARSEABLE, None),  # a double negative is not read
    ("The answer is accurate and right.", UNPARSEABLE, None),  # only CORRECT gives CORRECT
    ("The statement is false.", UNPARSEABLE, None),
    ("Whether it is correct or wrong is unclear.", UNPARSEABLE, None),
    ('{"label": "UNSURE"}', UNPARSEABLE, None),
]


@pytest.mark.parametrize(("raw", "expected", "step"), TABLE)
def test_parser_table(raw, expected, step):
    parsed = parse_label(raw)
    if expected in (CORRECT, WRONG):
        assert (parsed.label, parsed.gap, parsed.decided_by) == (expected, None, step)
    else:
        assert (parsed.label, parsed.gap, parsed.decided_by) == (None, expected, step)


def test_the_table_is_large_and_covers_every_outcome_and_step():
    assert len(TABLE) >= 30
    assert {row[1] for row in TABLE} == {CORRECT, WRONG, AMBIGUOUS, UNPARSEABLE}
    assert {row[2] for row in TABLE} == {"json", "embedded_json", "words", None}


def test_the_word_rule_is_the_documented_one():
    assert word_verdicts("is not correct") == word_verdicts("isn't right") == {WRONG}
    assert word_verdicts("is not, in the end, correct") == {CORRECT}  # punctuation ends a negation
    assert word_verdicts("not a b correct") == {CORRECT}  # only the listed words may stand between
    assert word_verdicts("not quite entirely fully correct") == {WRONG}
    assert word_verdicts("not quite entirely fully really correct") == {CORRECT}  # at most three


def test_the_parser_version_is_recorded_and_decides_which_judgments_are_reused():
    """Version 2 reads negations and makes words giving both verdicts a gap. judge-settings.json
    records it and the judgment fingerprint covers the settings: a version-1 judgment is not reused."""
    config = load_config()
    settings = judge_settings(config.judge, Endpoint.simulated("judge", config, "http://127.0.0.1:1/v1"))
    assert PARSER_VERSION == settings.parser_version == 2
    older = settings.model_copy(update={"parser_version": 1})
    assert judgment_fingerprint(QUESTION, "red", older) != judgment_fingerprint(QUESTION, "red", settings)
