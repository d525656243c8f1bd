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


def test_the_answer_limit_serializes_answers():
    work = [UserWork([2, 2], [QuestionWork(3, 1), QuestionWork(3, 1)])]
    assert ideal_schedule(work, 1.0, Limits(answers=1)).makespan == 11.0


def test_the_user_limit_admits_users_in_plan_order():
    work = [UserWork([2]), UserWork([2]), UserWork([1], [QuestionWork(1, 1)])]
    assert ideal_schedule(work, 1.0, Limits(users=1)).makespan == 7.0
    assert ideal_schedule(work, 1.0, Limits(users=3)).makespan == 3.0


def test_a_user_holds_its_slot_until_its_last_judgment_and_gaps_skip_judging():
    work = [UserWork([1], [QuestionWork(2, 0)]), UserWork([1], [QuestionWork(1, 1)])]
    assert ideal_schedule(work, 0.5, Limits(users=1)).makespan == pytest.approx(3.0)  # 1.5 + 0.5 + 0.5 + 0.5
