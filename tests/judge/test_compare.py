"""compare_runs on hand-made run directories: pairing, scores, McNemar, intervals, flips, refusals."""

import re

import pytest
from plotly.offline import get_plotlyjs
from scipy.stats import binomtest

from judge.run_files import DATA_SHA, IMAGES_SHA, QUESTIONS_SHA, all_correct, make_run, result
from mobilemem.records import CompareFile
from mobilemem_judge.analysis.compare import CompareRefused, compare_runs
from mobilemem_judge.analysis.compare_page import render_compare

WRONG = {"correct": False, "f1": 0.0, "bleu1": 0.0}


def _zero(group) -> None:
    for score in (group.accuracy, group.f1, group.bleu1):
        assert (score.difference, score.low, score.high) == (0.0, 0.0, 0.0)
        assert score.a == score.b
    assert group.mcnemar.only_a_correct == group.mcnemar.only_b_correct == 0
    assert group.mcnemar.p_value is None


def test_a_run_against_itself_has_no_difference(tmp_path):
    run = make_run(tmp_path / "a", all_correct(**{"0_q_2": WRONG}))
    compared = compare_runs(run, run)
    assert compared.overall.compared == 6
    _zero(compared.overall)
    for group in [*compared.by_language.values(), *compared.by_difficulty.values()]:
        _zero(group)
    assert compared.correct_only_in_a == [] and compared.correct_only_in_b == []
    assert compared.run_a == compared.run_b and compared.run_a.scored_only_here == 0
    assert CompareFile.model_validate_json(compared.model_dump_json()) == compared


def test_injected_wrong_answers_are_exactly_the_flips(tmp_path):
    a = make_run(tmp_path / "a", all_correct())
    b = make_run(tmp_path / "b", all_correct(**{"0_q_2": WRONG, "1_q_3": WRONG}), run_id="bbbbbbbb-2222")
    compared = compare_runs(a, b)
    assert [(f.user_id, f.question_id) for f in compared.correct_only_in_a] == [(0, "0_q_2"), (1, "1_q_3")]
    assert compared.correct_only_in_b == []
    flip = compared.correct_only_in_a[0]
    assert (flip.question, flip.prediction_a, flip.prediction_b, flip.label_a, flip.label_b, flip.gold) == (
        "What was shown in 0_q_2?", "right 0_q_2", "wrong 0_q_2", "CORRECT", "WRONG", ["gold 0_q_2"])
    overall = compared.overall
    assert (overall.accuracy.a, overall.accuracy.b) == (1.0, pytest.approx(4 / 6))
    assert overall.accuracy.difference == pytest.approx(-2 / 6)
    test = overall.mcnemar
    assert (test.both_correct, test.neither_correct, test.only_a_correct, test.only_b_correct) == (4, 0, 2, 0)
    assert test.p_value == pytest.approx(binomtest(0, 2, 0.5).pvalue)  # exact: 2 discordant pairs, all one way
    assert overall.f1.difference == pytest.approx(-1 / 6) and overall.bleu1.difference == pytest.approx(-0.25 / 3)
    for score in (overall.accuracy, overall.f1, overall.bleu1):
        assert score.low <= score.difference <= score.high <= 0.0
    assert compared == compare_runs(a, b)  # seeded: the same files give the same intervals


def test_the_reverse_direction_mirrors_the_flips(tmp_path):
    a = make_run(tmp_path / "a", all_correct(**{"0_q_1": WRONG}))
    b = make_run(tmp_path / "b", all_correct(**{"1_q_1": WRONG}), run_id="bbbbbbbb-2222")
    forward, backward = compare_runs(a, b), compare_runs(b, a)
    assert [f.question_id for f in forward.correct_only_in_a] == ["1_q_1"]
    assert [f.question_id for f in forward.correct_only_in_b] == ["0_q_1"]
    assert forward.correct_only_in_a[0].label_a == "CORRECT" and forward.correct_only_in_b[0].label_b == "CORRECT"
    assert [f.question_id for f in backward.correct_only_in_a] == ["0_q_1"]
    assert forward.overall.accuracy.difference == 0.0 and forward.overall.mcnemar.p_value == pytest.approx(1.0)


def test_by_language_and_difficulty(tmp_path):
    a = make_run(tmp_path / "a", all_correct())
    b = make_run(tmp_path / "b", all_correct(**{"1_q_1": WRONG}))
    compared = compare_runs(a, b)
    assert {k: g.compared for k, g in compared.by_language.items()} == {"Chinese": 3, "en": 3}
    assert {k: g.compared for k, g in compared.by_difficulty.items()} == {"None": 1, "easy": 3, "medium": 2}
    assert compared.by_language["en"].accuracy.difference == 0.0
    assert compared.by_language["Chinese"].accuracy.difference == pytest.approx(-1 / 3)
    assert compared.by_difficulty["easy"].mcnemar.only_a_correct == 1
    assert compared.by_difficulty["medium"].mcnemar.p_value is None


def test_only_questions_scored_in_both_are_paired(tmp_path):
    a = make_run(tmp_path / "a", all_correct(**{"0_q_3": {"status": "answer"}}))
    b = make_run(tmp_path / "b", [line for line in all_correct(**{"1_q_2": {"status": "judge"}})
                                  if line.question_id != "0_q_1"])
    compared = compare_runs(a, b)
    assert compared.overall.compared == 3  # not 0_q_1 (absent in B), 0_q_3 (gap in A), 1_q_2 (gap in B)
    assert (compared.run_a.scored, compared.run_a.scored_only_here) == (5, 2)
    assert (compared.run_b.scored, compared.run_b.scored_only_here) == (4, 1)


def test_a_single_pair_has_a_difference_but_no_interval(tmp_path):
    a = make_run(tmp_path / "a", [result(0, "0_q_1", "en", "easy")])
    b = make_run(tmp_path / "b", [result(0, "0_q_1", "en", "easy", **WRONG)])
    score = compare_runs(a, b).overall.f1
    assert (score.difference, score.low, score.high) == (-0.5, None, None)


def test_nothing_in_common_compares_nothing(tmp_path):
    a = make_run(tmp_path / "a", [result(0, "0_q_1", "en", "easy")])
    b = make_run(tmp_path / "b", [result(0, "0_q_2", "en", "easy")])
    overall = compare_runs(a, b).overall
    assert overall.compared == 0 and overall.accuracy.a is None and overall.f1.difference is None


def test_question_text_comes_from_either_run_or_is_null(tmp_path):
    a = make_run(tmp_path / "a", all_correct(), jobs=False)
    b = make_run(tmp_path / "b", all_correct(**{"0_q_1": WRONG}))
    assert compare_runs(a, b).correct_only_in_a[0].question == "What was shown in 0_q_1?"
    c = make_run(tmp_path / "c", all_correct(**{"0_q_1": WRONG}), jobs=False)
    assert compare_runs(a, c).correct_only_in_a[0].question is None


@pytest.mark.parametrize("field", ["data_sha256", "questions_sha256"])
def test_runs_of_different_datasets_are_refused(tmp_path, field):
    a = make_run(tmp_path / "a", all_correct())
    b = make_run(tmp_path / "b", all_correct(), **{field: "e" * 64})
    with pytest.raises(CompareRefused) as refused:
        compare_runs(a, b)
    message = str(refused.value)
    assert "\n" not in message and "different datasets" in message
    expected = DATA_SHA if field == "data_sha256" else QUESTIONS_SHA
    assert f"{field} differs: {expected} in {a} vs {'e' * 64} in {b}" in message
    assert ({"data_sha256", "questions_sha256"} - {field}).pop() not in message


def test_runs_whose_images_differ_for_a_user_in_both_are_refused_naming_the_user(tmp_path):
    a = make_run(tmp_path / "a", all_correct(), images_sha256={"0": IMAGES_SHA, "1": IMAGES_SHA})
    b = make_run(tmp_path / "b", all_correct(), images_sha256={"0": IMAGES_SHA, "1": "e" * 64})
    with pytest.raises(CompareRefused) as refused:
        compare_runs(a, b)
    assert str(refused.value) == (f"the runs evaluated different datasets: the images of user 1 differ: "
                                  f"images_sha256 {IMAGES_SHA} in {a} vs {'e' * 64} in {b}")
    only_user_0 = make_run(tmp_path / "c", [line for line in all_correct() if line.user_id == 0],
                           images_sha256={"0": IMAGES_SHA})
    assert compare_runs(b, only_user_0).overall.compared == 3  # user 1 is in one run only: not compared


def test_a_run_made_before_image_hashes_is_refused(tmp_path):
    new = make_run(tmp_path / "new", all_correct())
    old = make_run(tmp_path / "old", all_correct(), images_sha256={})
    for pair in ((new, old), (old, new)):
        with pytest.raises(CompareRefused) as refused:
            compare_runs(*pair)
        assert str(refused.value) == (f"{old} was made before image hashes were recorded: cannot tell whether "
                                      f"the images are the same")


def test_missing_or_broken_runs_are_refused_in_one_line(tmp_path):
    good = make_run(tmp_path / "good", all_correct())
    (tmp_path / "empty").mkdir()
    no_results = make_run(tmp_path / "no-results", all_correct())
    (no_results / "results.jsonl").unlink()
    broken = make_run(tmp_path / "broken", all_correct())
    (broken / "run.json").write_text('{"schema_version": 1}')
    cases = {tmp_path / "absent": "is not a run directory", tmp_path / "empty": "no run.json",
             no_results: "has no results.jsonl", broken: "run.json: not a valid RunFile"}
    for root, expected in cases.items():
        with pytest.raises(CompareRefused, match=re.escape(expected)) as refused:
            compare_runs(good, root)
        assert "\n" not in str(refused.value)


def test_the_page_is_offline_and_lists_the_flips(tmp_path):
    a = make_run(tmp_path / "a", all_correct())
    b = make_run(tmp_path / "b", all_correct(**{"0_q_2": WRONG}))
    page = render_compare(compare_runs(a, b))
    assert page.count(get_plotlyjs()) == 1
    ours = page.replace(get_plotlyjs(), "")  # the library's own source mentions URLs it never loads here
    assert not re.search(r"https?://|//cdn|<script[^>]+src|<link", ours)
    assert "0_q_2" in ours and "What was shown in 0_q_2?" in ours and "wrong 0_q_2" in ours
    assert "By language" in ours and "By difficulty" in ours and "Plotly.newPlot" in ours
