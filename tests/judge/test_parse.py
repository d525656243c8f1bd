import pytest

from mobilemem_judge import parse_label

TABLE = [
    ('{"label": "CORRECT"}', "CORRECT", "json"),
    ('  {"label": "wrong"}\n', "WRONG", "json"),
    ('```json\n{"label": "WRONG"}\n```', "WRONG", "embedded_json"),
    ('The answer names the same colour.\n{"label": "CORRECT"}', "CORRECT", "embedded_json"),
    ('Reasoning: {"note": 1} then {"label": "WRONG"} and {"label": "CORRECT"}', "WRONG", "embedded_json"),
    ("The generated answer is CORRECT.", "CORRECT", "words"),
    ("INCORRECT", "WRONG", "words"),
    ("This is incorrect, not correct.", "WRONG", "words"),
    ("CORRECT or WRONG? WRONG.", "WRONG", "words"),
    ('{"label": "PARTIAL"} but overall correct', "CORRECT", "words"),
    ("", None, None),
    ("I am not sure.", None, None),
    ("CORRECTLY INCORRECTLY", None, None),
    (None, None, None),
]


@pytest.mark.parametrize(("raw", "label", "step"), TABLE)
def test_parser_table(raw, label, step):
    parsed = parse_label(raw)
    assert (parsed.label, parsed.decided_by) == (label, step)
