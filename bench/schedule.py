"""The ideal schedule of an evaluation: the same DAG and limits, zero harness overhead.

Per user (at most `users` at once, admitted in plan order): its sessions one after another, then
every question's answer followed by its judgment; a question holds one of `questions` slots
(across all users) from the start of its answer to the end of its judgment, and at most
`judgments` judgments are in flight. Waiting steps are served first come, first served. A step that
made `n` model requests takes `n * latency` seconds. A user holds its slot from its first session
to its last judgment. Discrete-event simulation; pure, no I/O.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from dataclasses import dataclass, field


@dataclass(frozen=True)
class QuestionWork:
    answer_requests: int
    judge_requests: int  # 0 when the question was not judged


@dataclass(frozen=True)
class UserWork:
    session_requests: list[int]
    questions: list[QuestionWork] = field(default_factory=list)


@dataclass(frozen=True)
class Limits:
    users: int = 4
    questions: int = 16  # answer + judgment of one question
    judgments: int = 16


@dataclass(frozen=True)
class IdealSchedule:
    makespan: float
    answer_busy: float  # summed duration of answer steps
    answer_span: float  # first answer start to last answer end

    @property
    def mean_answer_concurrency(self) -> float:
        return self.answer_busy / self.answer_span if self.answer_span else 0.0


def ideal_schedule(work: list[UserWork], latency: float, limits: Limits) -> IdealSchedule:
    sequence = itertools.count()
    events: list[tuple[float, int, str, tuple[int, int]]] = []
    waiting_users = deque(range(len(work)))
    waiting_answers: deque[tuple[int, int]] = deque()
    waiting_judgments: deque[tuple[int, int]] = deque()
    free = {"users": limits.users, "questions": limits.questions, "judgments": limits.judgments}
    left = [len(u.questions) for u in work]
    now = makespan = busy = last_answer = 0.0
    first_answer: float | None = None

    def at(time: float, kind: str, payload: tuple[int, int]) -> None:
        heapq.heappush(events, (time, next(sequence), kind, payload))

    def dispatch() -> None:
        nonlocal busy, first_answer
        while free["users"] and waiting_users:
            user = waiting_users.popleft()
            free["users"] -= 1
            at(now + sum(work[user].session_requests) * latency, "history", (user, -1))
        while free["questions"] and waiting_answers:
            user, question = waiting_answers.popleft()
            free["questions"] -= 1
            duration = work[user].questions[question].answer_requests * latency
            busy += duration
            first_answer = now if first_answer is None else first_answer
            at(now + duration, "answered", (user, question))
        while free["judgments"] and waiting_judgments:
            user, question = waiting_judgments.popleft()
            free["judgments"] -= 1
            at(now + work[user].questions[question].judge_requests * latency, "judged", (user, question))

    def question_done(user: int) -> None:
        nonlocal makespan
        free["questions"] += 1
        left[user] -= 1
        if left[user] == 0:
            free["users"] += 1
            makespan = max(makespan, now)

    dispatch()
    while events:
        now, _, kind, (user, question) = heapq.heappop(events)
        if kind == "history":
            waiting_answers.extend((user, q) for q in range(len(work[user].questions)))
            if not work[user].questions:
                free["questions"] -= 1  # question_done gives back a slot this user never took
                left[user] = 1
                question_done(user)
        elif kind == "answered":
            last_answer = max(last_answer, now)
            if work[user].questions[question].judge_requests:
                waiting_judgments.append((user, question))
            else:
                question_done(user)
        else:
            free["judgments"] += 1
            question_done(user)
        dispatch()
    span = last_answer - first_answer if first_answer is not None else 0.0
    return IdealSchedule(makespan=makespan, answer_busy=busy, answer_span=span)
