import json
from pathlib import Path

import pytest

from mobilemem.metrics import bleu1, overlap_scores, score_text, token_f1, tokens

VECTORS = json.loads((Path(__file__).parent / "data" / "reference" / "metric_vectors.json").read_text())


@pytest.mark.parametrize("vector", VECTORS, ids=[f"{v['prediction'][:20]}|{v['reference'][:20]}" for v in VECTORS])
def test_official_vectors_reproduce_exactly(vector):
    assert token_f1(vector["prediction"], vector["reference"]) == vector["f1"]
    assert bleu1(vector["prediction"], vector["reference"]) == vector["bleu1"]


def test_tokens():
    assert tokens("It cost 1,250.50 yuan on 2025-03-15.") == ["it", "cost", "1", "250", "50", "yuan", "on", "2025",
                                                                "03", "15"]
    assert tokens("B. 婚礼、差旅") == ["b", "婚", "礼", "差", "旅"]
    assert tokens("café ２０２５") == ["caf"]


def test_several_references_take_the_best_first_on_ties():
    scores = overlap_scores("The colour is red.", ["blue", "red", "red XQZMARK-ans-0-1"])
    assert scores.reference == "red" and scores.f1 == token_f1("The colour is red.", "red")
    assert overlap_scores("x", ["a", "b"]).reference == "a"
    assert overlap_scores("red", "red").f1 == 1.0
    with pytest.raises(ValueError):
        overlap_scores("x", [])


def test_a_score_is_written_with_four_decimals_or_n_a():
    assert (score_text(None), score_text(0.5), score_text(1 / 3)) == ("n/a", "0.5000", "0.3333")
