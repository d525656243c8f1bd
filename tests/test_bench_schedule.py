import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from schedule import Limits, QuestionWork, UserWork, ideal_schedule  # noqa: E402


def test_one_user_history_then_parallel_answers_then_judgments():
    work = [UserWork([2, 2], [QuestionWork(3, 1), QuestionWork(3, 1)])]
    schedule = ideal_schedule(work, 1.0, Limits())
    assert schedule.makespan == 8.0  # 4 s of history, 3 s of answers side by side, 1 s of judging
    assert schedule.answer_busy == 6.0 and schedule.answer_span == 3.0 and schedule.mean_answer_concurrency == 2.0


def test_the_question_limit_serializes_questions_from_answer_start_to_judgment_end():
    work = [UserWork([2, 2], [QuestionWork(3, 1), QuestionWork(3, 1)])]
    assert ideal_schedule(work, 1.0, Limits(questions=1)).makespan == 12.0  # 4 + (3 + 1) + (3 + 1)
    assert ideal_schedule(work, 1.0, Limits(questions=2, judgments=1)).makespan == 9.0  # judgments queue


def test_a_question_waiting_for_a_judge_keeps_its_slot():
    work = [UserWork([1], [QuestionWork(1, 3), QuestionWork(1, 3), QuestionWork(1, 1)])]
    # q0, q1 answer in [1, 2]; q0 judges [2, 5], q1 waits for the judge and judges [5, 8]; q2 gets a slot at 5
    assert ideal_schedule(work, 1.0, Limits(questions=2, judgments=1)).makespan == 9.0


def test_the_user_limit_admits_users_in_plan_order():
    work = [UserWork([2]), UserWork([2]), UserWork([1], [QuestionWork(1, 1)])]
    assert ideal_schedule(work, 1.0, Limits(users=1)).makespan == 7.0
    assert ideal_schedule(work, 1.0, Limits(users=3)).makespan == 3.0


def test_a_user_holds_its_slot_until_its_last_judgment_and_gaps_skip_judging():
    work = [UserWork([1], [QuestionWork(2, 0)]), UserWork([1], [QuestionWork(1, 1)])]
    assert ideal_schedule(work, 0.5, Limits(users=1)).makespan == pytest.approx(3.0)  # 1.5 + 0.5 + 0.5 + 0.5
