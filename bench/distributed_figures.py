"""The figures of a distributed run (issue 25), from what it left: the run directory's records and
the user runs' Prefect state histories. Pure: no I/O here beyond reading the records.

- per user: scheduling (the parent's start request, i.e. the user run's first state, to Running),
  start-up (Running to its first model request; to host.json, the flow body's start, on the way)
  and teardown (its last record's end to the run's final state);
- per limit: how long all its slots were held (the share of the span from the first holder's start
  to the last one's end) and the hand-off gaps: from a holder's release to the next holder's start,
  counted only when every slot was held until the release and a holder was waiting (ready, not
  started) at it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime

from mobilemem.records import AnswerResponseFile, HostFile, IndexResponseFile, JudgmentFile, RunFile, SessionFile
from mobilemem.rundir import RunDir, read_record

Interval = tuple[float, float]


@dataclass(frozen=True)
class UserRun:
    """A user's run as the Prefect server saw it: unix times of its states."""

    requested: float  # its first state (SCHEDULED): the parent's start request
    pending: float | None  # a worker took it
    running: float | None
    final: float | None


@dataclass(frozen=True)
class UserRecords:
    """A user's timings from its records (unix times)."""

    host_started: float
    first_request: float | None
    last_record: float | None
    history_done: float | None  # its last session / index record: its questions are ready
    questions: list[Interval]  # answer start to judgment end (answer end when not judged)
    judgments: list[tuple[float, Interval]]  # (answer end = ready, judgment interval)


def _t(moment: datetime) -> float:
    return moment.timestamp()


def user_records(run: RunDir, user_id: int) -> UserRecords:
    user = run.user(user_id)
    plan = read_record(run.run, RunFile)
    starts, ends, history = [], [], []
    for path in user.sessions.glob("*.json"):
        session = read_record(path, SessionFile)
        starts += [_t(r.started_at) for r in session.requests]
        ends.append(_t(session.finished_at))
        history.append(_t(session.finished_at))
    if user.index_response.exists():
        index = read_record(user.index_response, IndexResponseFile)
        history.append(_t(index.finished_at))
        ends.append(_t(index.finished_at))
    questions, judgments = [], []
    for planned in (q for q in plan.questions if q.user_id == user_id):
        folder = user.question(planned.question_id)
        if not folder.answer_response.exists():
            continue
        answer = read_record(folder.answer_response, AnswerResponseFile)
        starts += [_t(r.started_at) for r in answer.requests]
        end = _t(answer.finished_at)
        if folder.judgment.exists():
            judgment = read_record(folder.judgment, JudgmentFile)
            starts += [_t(r.started_at) for r in judgment.requests]
            judgments.append((end, (_t(judgment.started_at), _t(judgment.finished_at))))
            end = _t(judgment.finished_at)
        questions.append((_t(answer.started_at), end))
        ends.append(end)
    host = read_record(user.host, HostFile)
    return UserRecords(_t(host.started_at), min(starts, default=None), max(ends, default=None),
                       max(history, default=None), questions, judgments)


def user_phases(runs: dict[int, UserRun], records: dict[int, UserRecords]) -> dict[str, float | None]:
    """Medians over the users of scheduling (with its part until a worker took the run), start-up
    (with its part before the flow body) and teardown, s."""
    phases: dict[str, list[float]] = {"scheduling_s": [], "pickup_s": [], "startup_s": [], "startup_to_body_s": [],
                                      "teardown_s": []}
    for user_id, run in runs.items():
        mine = records.get(user_id)
        if run.pending is not None:
            phases["pickup_s"].append(run.pending - run.requested)
        if run.running is not None:
            phases["scheduling_s"].append(run.running - run.requested)
            if mine is not None:
                phases["startup_to_body_s"].append(mine.host_started - run.running)
                if mine.first_request is not None:
                    phases["startup_s"].append(mine.first_request - run.running)
        if run.final is not None and mine is not None and mine.last_record is not None:
            phases["teardown_s"].append(run.final - mine.last_record)
    return {f"{name}_median": statistics.median(values) if values else None for name, values in phases.items()}


def peak(intervals: list[Interval]) -> int:
    """The most intervals open at once (an end before a start at the same instant)."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    most = current = 0
    for _, step in events:
        current += step
        most = max(most, current)
    return most


def full_share(intervals: list[Interval], capacity: int) -> float:
    """The share of the span (first start to last end) with at least `capacity` intervals open."""
    if not intervals:
        return 0.0
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    full = current = 0
    previous = events[0][0]
    for moment, step in events:
        if current >= capacity:
            full += moment - previous
        current += step
        previous = moment
    span = max(e for _, e in intervals) - min(s for s, _ in intervals)
    return full / span if span > 0 else 0.0


def handoff_gaps(holders: list[tuple[float, Interval]], capacity: int) -> list[float]:
    """For each release (a holder's end) while every slot was held and another holder was ready but
    not started: the seconds until the earliest such waiter started. `holders` are
    (ready, (start, end)); each waiter takes one release. A waiter that starts late while a slot is
    free is not a hand-off and is not counted."""
    taken: set[int] = set()
    gaps = []
    for release in sorted(end for _, (_, end) in holders):
        held = sum(start < release <= end for _, (start, end) in holders)
        waiting = [(start, i) for i, (ready, (start, _)) in enumerate(holders)
                   if i not in taken and ready <= release < start]
        if held >= capacity and waiting:
            start, i = min(waiting)
            taken.add(i)
            gaps.append(start - release)
    return gaps


def limit_figures(holders: list[tuple[float, Interval]], capacity: int) -> dict:
    """Peak, mean occupancy, the share of the span with every slot held, and the hand-off gaps."""
    intervals = [interval for _, interval in holders]
    if not intervals:
        return {"capacity": capacity, "holders": 0, "peak": 0, "mean_held": 0.0, "full_share": 0.0,
                "handoffs": 0, "handoff_median_ms": None, "handoff_p90_ms": None, "handoff_max_ms": None}
    span = max(e for _, e in intervals) - min(s for s, _ in intervals)
    gaps = sorted(handoff_gaps(holders, capacity))
    return {"capacity": capacity, "holders": len(intervals), "peak": peak(intervals),
            "mean_held": sum(e - s for s, e in intervals) / span if span > 0 else 0.0,
            "full_share": full_share(intervals, capacity), "handoffs": len(gaps),
            "handoff_median_ms": 1000 * statistics.median(gaps) if gaps else None,
            "handoff_p90_ms": 1000 * gaps[min(len(gaps) - 1, round(0.9 * (len(gaps) - 1)))] if gaps else None,
            "handoff_max_ms": 1000 * gaps[-1] if gaps else None}


def limits(runs: dict[int, UserRun], records: dict[int, UserRecords], capacities: dict[str, int]) -> dict[str, dict]:
    """`limit_figures` of the questions, the judgments, the parent's user limit (start request to
    final state) and the workers' slots (Running to final state)."""
    questions = [(r.history_done or s, (s, e)) for r in records.values() for s, e in r.questions]
    judgments = [held for r in records.values() for held in r.judgments]
    first = min((run.requested for run in runs.values()), default=0.0)
    finished = {uid: run for uid, run in runs.items() if run.final is not None}
    users = [(first, (run.requested, run.final)) for run in finished.values()]
    workers = [(run.requested, (run.running, run.final)) for run in finished.values() if run.running is not None]
    return {name: limit_figures(holders, capacities[name]) for name, holders in
            (("questions", questions), ("judgments", judgments), ("users", users), ("worker_slots", workers))}
