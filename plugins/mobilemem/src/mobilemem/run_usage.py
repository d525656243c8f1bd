"""summary.json's `usage`: what this run's candidate requests cost (usage policy v3, DESIGN §7.1).

Memory cost comes only from sessions/*.json, answer cost only from answer-response.json; judge
usage never counts. Memories and answers copied from an earlier run (`reuse.json`) cost this run
nothing: they are reported apart (`reused`, with their usage in the earlier run) and are known 0s
in the means. The means follow the seed: this run's observed cost over *every* scheduled user
((memory + answer tokens) / scheduled users) and *every* expected question (answer tokens /
expected questions); no unit leaves the denominator. A unit never attempted is a known 0 too. An
unknown count is never averaged in as 0: a unit with a damaged record (a session, an answer, the
user's reuse.json) or with a successful request that reported no usage makes the mean's `value`
null, while `tokens` and `known` say what is known.
"""

from __future__ import annotations

from collections import defaultdict

from mobilemem.outcomes import Outcome
from mobilemem.records import MeanTokens, ObservedRequest, ReusedSummary, ReuseFile, SessionFile, UsageSummary, UserUsage
from mobilemem.run_reader import DamagedFile, RunReader
from mobilemem.usage import known_tokens, summarize

Unit = list[ObservedRequest] | None  # one unit's requests in this run; None: not known (a damaged record)


def _known_tokens(requests: list[ObservedRequest]) -> int | None:
    return known_tokens(summarize(requests))


def mean_tokens(units: list[Unit], attempted: int, completed: int, reused: int) -> MeanTokens:
    """This run's tokens over all `units`: the mean only when every unit's count is known."""
    counts = [_known_tokens(unit) if unit is not None else None for unit in units]
    known = [count for count in counts if count is not None]
    tokens = sum(known) if known else None
    whole = tokens is not None and len(known) == len(units)
    return MeanTokens(value=tokens / len(units) if whole else None, tokens=tokens, denominator=len(units),
                      known=len(known), attempted=attempted, completed=completed, reused=reused)


def _reuse_records(reader: RunReader) -> tuple[dict[int, ReuseFile], set[int]]:
    """Each scheduled user's reuse.json (when it has one), and the users whose reuse.json is damaged:
    what of theirs is this run's cannot be told."""
    records, damaged = {}, set()
    for user_id in reader.plan.users:
        try:
            record = reader.maybe(reader.run.user(user_id).reuse, ReuseFile)
        except DamagedFile as exc:
            reader.note(exc)
            damaged.add(user_id)
            continue
        if record is not None:
            records[user_id] = record
    return records, damaged


def _session_requests(reader: RunReader, user_id: int) -> list[Unit]:
    """Each session's requests; None for a damaged session file."""
    sessions = (reader.tolerant(p, SessionFile) for p in reader.files(reader.run.user(user_id).sessions, ".json"))
    return [s.requests if s is not None else None for s in sessions]


def _joined(units: list[Unit]) -> Unit:
    """The units' requests together; None when one of them is damaged."""
    return None if None in units else [r for unit in units if unit for r in unit]


def _user_usage(user_id: int, sessions: list[Unit], answers: list[Unit], reused: bool) -> UserUsage:
    memory, answer = _joined(sessions), _joined(answers)
    return UserUsage(user_id=user_id, sessions=len(sessions), reused=reused,
                     memory_tokens=None if memory is None else _known_tokens(memory),
                     answer_tokens=None if answer is None else _known_tokens(answer))


def _key(outcome: Outcome) -> tuple[int, str]:
    return outcome.planned.user_id, outcome.planned.question_id


def summarize_usage(reader: RunReader, outcomes: list[Outcome]) -> UsageSummary:
    run, plan = reader.run, reader.plan
    reuse, unreadable = _reuse_records(reader)
    copied_memory = {u for u, record in reuse.items() if record.memory is not None}
    copied_answers = {(u, q) for u, record in reuse.items() for q in record.answers}
    sessions = {u: _session_requests(reader, u) for u in plan.users}
    fresh_users = [u for u in plan.users if u not in copied_memory]
    copied = [o for o in outcomes if _key(o) in copied_answers]
    fresh = [o for o in outcomes if _key(o) not in copied_answers]

    def answer_unit(outcome: Outcome) -> Unit:
        if _key(outcome) in copied_answers:
            return []  # copied: it cost this run nothing
        if outcome.answer_damaged or outcome.planned.user_id in unreadable:
            return None
        return outcome.answer.requests if outcome.answer else []

    per_question = [answer_unit(o) for o in outcomes]
    answers: dict[int, list[Unit]] = defaultdict(list)
    for outcome, unit in zip(outcomes, per_question):
        answers[outcome.planned.user_id].append(unit)
    per_user = [None if u in unreadable else _joined([*([] if u in copied_memory else sessions[u]), *answers[u]])
                for u in plan.users]
    reused_sessions = [s for u in plan.users if u in copied_memory for s in sessions[u] if s is not None]
    return UsageSummary(
        memory=summarize(r for u in fresh_users for s in sessions[u] if s for r in s),
        answer=summarize(r for o in fresh if o.answer for r in o.answer.requests),
        mean_tokens_per_user=mean_tokens(
            per_user, sum(bool(sessions[u]) or run.user(u).memory_usage.exists() for u in fresh_users),
            sum(run.user(u).memory_usage.exists() for u in fresh_users), len(copied_memory)),
        mean_tokens_per_question=mean_tokens(per_question, sum(o.answer is not None for o in fresh),
                                             sum(o.answered for o in fresh), len(copied)),
        reused=ReusedSummary(
            users=len(copied_memory), sessions=len(reused_sessions), answers=len(copied),
            judgments=sum(len(r.judgments) for r in reuse.values()),
            memory=summarize(r for s in reused_sessions for r in s) if reused_sessions else None,
            answer=summarize(r for o in copied if o.answer for r in o.answer.requests) if copied else None),
        users=[_user_usage(u, sessions[u], answers[u], reused=u in copied_memory) for u in plan.users])
