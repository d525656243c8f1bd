from hypothesis import given
from hypothesis import strategies as st

from mobilemem.metrics import bleu1, token_f1, tokens

TEXT = st.text(alphabet=st.sampled_from(list("abcXYZ019 .,-") + ["婚", "礼", "é", "２"]), max_size=30)


@given(TEXT, TEXT)
def test_scores_are_bounded(a, b):
    assert 0.0 <= token_f1(a, b) <= 1.0
    assert 0.0 <= bleu1(a, b) <= 1.0


@given(TEXT, TEXT)
def test_f1_is_symmetric(a, b):
    assert token_f1(a, b) == token_f1(b, a)


@given(TEXT)
def test_identical_texts_with_tokens_score_one(text):
    if tokens(text):
        assert token_f1(text, text) == 1.0 and bleu1(text, text) == 1.0


@given(st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), max_size=20))
def test_cjk_ideographs_are_single_tokens(text):
    assert tokens(text) == list(text)
