"""What of a user an earlier run holds that this run would produce itself: one matcher, used by the
`reuse_user` task (through `take_user`, which then copies) and by `plan` (which only reports). It
lives on this side of the judge boundary because a judgment's fingerprint covers the references.

What cannot be reused (a damaged or linked file, a memory whose files differ from its manifest)
is a line in `UserMatch.skipped` and is done again in this run; the rest of the user is still
reused."""

from __future__ import annotations

from dataclasses import dataclass, field

import mobilemem_judge
from mobilemem import fingerprints, reuse
from mobilemem.records import CandidatePreset, JudgeSettingsFile
from mobilemem.dataset import JudgeQuestion, ScheduledUser
from mobilemem.rundir import RunDir
from mobilemem.run_reader import DamagedFile


@dataclass
class UserMatch:
    memory: str  # this run's memory fingerprint of the user
    source: reuse.EarlierRun | None  # the first earlier run holding that complete memory
    answers: dict[str, tuple[str, str]] = field(default_factory=dict)  # question id -> (fingerprint, answer text)
    judgments: dict[str, str] = field(default_factory=dict)  # question id -> fingerprint
    skipped: list[str] = field(default_factory=list)  # one line per earlier file not reused, and what is redone


@dataclass(frozen=True)
class Wanted:
    """What this run would produce for one user: the terms of `match_user` and `take_user`."""

    user: ScheduledUser
    memory: str
    preset: CandidatePreset
    judge_questions: dict[str, JudgeQuestion]
    judge_settings: JudgeSettingsFile
    judgments: bool = True  # False (rejudge): no judgment is matched


def _match_questions(match: UserMatch, source: reuse.EarlierRun, wanted: Wanted) -> UserMatch:
    """Each successful answer of the same fingerprint in `source`, then its judgment."""
    match.source, user_id = source, wanted.user.user_id
    for job in wanted.user.questions:
        answer_id = fingerprints.answer_fingerprint(wanted.memory, job, wanted.preset)
        answer = reuse.find_answer(source, user_id, job.question_id, answer_id, match.skipped)
        if answer is None or answer.response is None:
            continue
        text = answer.response.answer or ""
        match.answers[job.question_id] = (answer_id, text)
        judgment_id = mobilemem_judge.judgment_fingerprint(wanted.judge_questions[job.question_id], text,
                                                           wanted.judge_settings)
        if wanted.judgments and reuse.find_judgment(source, user_id, job.question_id, judgment_id, match.skipped):
            match.judgments[job.question_id] = judgment_id
    return match


def match_user(earlier: list[reuse.EarlierRun], user: ScheduledUser, memory: str, preset: CandidatePreset,
               judge_questions: dict[str, JudgeQuestion], judge_settings: JudgeSettingsFile,
               judgments: bool = True) -> UserMatch:
    """The memory, then (only from that same earlier run) each successful answer and each judgment of
    the same fingerprints; `judgments=False` (rejudge) matches no judgment. Nothing is copied, and
    the memory's files are not yet checked against its manifest (`take_user` does, as it copies)."""
    wanted = Wanted(user, memory, preset, judge_questions, judge_settings, judgments)
    match = UserMatch(memory, None)
    found = next(reuse.memories(earlier, user.user_id, memory, match.skipped), None)
    return match if found is None else _match_questions(match, found.source, wanted)


def _copy_questions(match: UserMatch, target: RunDir, user_id: int) -> None:
    """Each matched answer, then each matched judgment; one that cannot be copied is done again (an
    answer not copied takes its judgment along)."""
    assert match.source is not None
    for kept, copy, redo in ((match.answers, reuse.copy_answer, "the question is answered again"),
                             (match.judgments, reuse.copy_judgment, "the answer is judged again")):
        for question_id in list(kept):
            try:
                copy(match.source, target, user_id, question_id)
            except DamagedFile as exc:
                match.skipped.append(f"{exc}: {redo}")
                del kept[question_id]
                match.judgments.pop(question_id, None)


def take_user(earlier: list[reuse.EarlierRun], target: RunDir, wanted: Wanted) -> UserMatch:
    """Match and copy into `target`: the first complete memory whose files are those of its manifest
    (a memory that differs is discarded, named in `skipped`, and the next earlier run holding that
    memory is tried), then its answers and judgments. Every skipped line also goes to the log."""
    user_id = wanted.user.user_id
    match = UserMatch(wanted.memory, None)
    for found in reuse.memories(earlier, user_id, wanted.memory, match.skipped):
        reason = reuse.copy_memory(found, target, user_id)
        if reason is None:
            _copy_questions(_match_questions(match, found.source, wanted), target, user_id)
            break
        match.skipped.append(f"{reason}: that memory is not reused")
    reuse.report_skipped(user_id, match.skipped)
    return match
