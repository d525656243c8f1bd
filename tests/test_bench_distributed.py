"""`bench/overhead.py --distributed N`: its refusals and its figures, on hand-made timings (fast; the
real cluster run is the benchmark itself)."""

import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from distributed import report  # noqa: E402
from distributed_figures import UserRecords, UserRun, full_share, handoff_gaps, limit_figures, limits, peak, \
    user_phases  # noqa: E402


@pytest.mark.parametrize("args, refusal", [
    (["--distributed", "2"], "--distributed needs --db postgres (distributed mode runs on PostgreSQL), not sqlite"),
    (["--distributed", "2", "--db", "sqlite"], "not sqlite"),
    (["--distributed", "0", "--db", "postgres"], "--distributed needs at least 1 worker, not 0"),
    (["--distributed", "1", "--db", "postgres", "--latency", "1", "0"], "latencies above 0"),
    (["--worker-poll", "1"], "--worker-poll needs --distributed"),
])
def test_bad_options_are_refused_in_one_line_before_anything_starts(args, refusal, tmp_path):
    done = subprocess.run([sys.executable, "bench/overhead.py", *args, "--cache", str(tmp_path / "cache")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("overhead.py: ") and refusal in line
    assert not (tmp_path / "cache").exists()  # not even the dataset was generated


def test_peak_and_full_share_of_a_limit_of_two():
    held = [(0.0, 4.0), (0.0, 2.0), (2.0, 6.0), (4.0, 8.0)]  # two held over [0, 6], one over [6, 8]
    assert peak(held) == 2  # an end and a start at the same instant do not overlap
    assert full_share(held, 2) == pytest.approx(6 / 8)
    assert full_share(held, 3) == 0.0


def test_a_handoff_gap_counts_only_a_release_of_a_full_limit_with_a_waiter():
    holders = [(0.0, (0.0, 4.0)), (0.0, (0.0, 2.0)),
               (1.0, (2.1, 6.0)),  # waiting since 1: takes the release at 2 after 0.1 s
               (5.0, (5.0, 7.0)),  # ready at 5 and started at once (the release at 4 had no waiter)
               (5.5, (6.3, 9.0))]  # waiting since 5.5: takes the release at 6 after 0.3 s
    assert handoff_gaps(holders, 2) == pytest.approx([0.1, 0.3])
    # with three slots the limit was never full: a late start is not a hand-off
    assert handoff_gaps(holders, 3) == []
    figures = limit_figures(holders, 2)
    assert (figures["holders"], figures["peak"], figures["handoffs"]) == (5, 2, 2)
    assert figures["handoff_median_ms"] == pytest.approx(200) and figures["handoff_max_ms"] == pytest.approx(300)
    assert figures["mean_held"] == pytest.approx((4 + 2 + 3.9 + 2 + 2.7) / 9)


def test_each_waiter_takes_one_release():
    # two releases at 1 and one waiter: one hand-off; the second release has nobody waiting
    assert handoff_gaps([(0.0, (0.0, 1.0)), (0.0, (0.0, 1.0)), (0.0, (1.5, 2.0))], 2) == pytest.approx([0.5])


def _records(first_request: float, last: float) -> UserRecords:
    return UserRecords(host_started=first_request - 1.0, first_request=first_request, last_record=last,
                       history_done=first_request + 2.0, questions=[(first_request + 2.0, last)],
                       judgments=[(last - 1.0, (last - 1.0, last))])


def test_user_phases_are_medians_of_scheduling_startup_and_teardown():
    runs = {0: UserRun(requested=0.0, pending=5.0, running=7.0, final=30.0),
            1: UserRun(requested=0.0, pending=9.0, running=11.0, final=40.0),
            2: UserRun(requested=1.0, pending=2.0, running=4.0, final=None)}  # still running: no teardown
    records = {0: _records(8.0, 29.5), 1: _records(14.0, 39.5), 2: _records(5.0, 20.0)}
    phases = user_phases(runs, records)
    assert phases["scheduling_s_median"] == pytest.approx(7.0)  # 7, 11, 3
    assert phases["pickup_s_median"] == pytest.approx(5.0)  # 5, 9, 1
    assert phases["startup_s_median"] == pytest.approx(1.0)  # 1, 3, 1
    assert phases["startup_to_body_s_median"] == pytest.approx(0.0)  # 0, 2, 0
    assert phases["teardown_s_median"] == pytest.approx(0.5)
    slots = limits(runs, records, {"questions": 1, "judgments": 1, "users": 4, "worker_slots": 1})
    assert slots["users"]["holders"] == slots["worker_slots"]["holders"] == 2  # finished runs only
    assert slots["worker_slots"]["peak"] == 2 and slots["questions"]["holders"] == 3  # [7, 30] and [11, 40]


def test_the_report_states_the_target_and_every_limit():
    runs = {0: UserRun(0.0, 1.0, 2.0, 20.0)}
    records = {0: _records(3.0, 19.0)}
    result = {"workers": 1, "worker_poll_s": None, "latency_s": 1.0, "requests": 10, "questions": 1, "scored": 1,
              "expected": 1, "user_runs": 1, "run_dir": "/tmp/x", "gaps": {}, "orchestration_errors": [],
              "makespan_ratio": 1.2, "measured_makespan_s": 12.0, "ideal_makespan_s": 10.0, "worker_capacity": 2,
              "ideal_at_worker_capacity_s": 11.0, "cpu_floor_s": 3.0, "makespan_ratio_vs_floor": 1.2,
              "answer_concurrency": 1.0, "ideal_answer_concurrency": 1.0, "runner_wall_s": 30.0,
              "user_phases": user_phases(runs, records), "limits": limits(runs, records, {
                  "questions": 16, "judgments": 16, "users": 4, "worker_slots": 2}),
              "server_503s": 0, "client_retries_after_503": 0, "client_retries_other": 0, "client_wait_s": 0.0,
              "server_cpu_ms_per_question": 900.0, "database_cpu_ms_per_question": 50.0, "server_cpu_s": 0.9,
              "database_cpu_s": 0.05, "workers_cpu_s": 6.0, "runner_cpu_s": 4.0, "window_cpu_s": {"server": 1.0},
              "cores": 2}
    text = report([result])
    assert "= 1.200  (target <= 1.15: MISSED)" in text and "(11.0 s): 1.091" in text
    for name in ("questions", "judgments", "users", "worker_slots"):
        assert f"limit {name} (" in text
    assert "parent runner wall 30.0 s" in text and "scheduling 2.00 s" in text and "503s answered by the server: 0 (target 0)" in text
