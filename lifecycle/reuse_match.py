"""What of a user an earlier run holds that this run would produce itself: one matcher, used by the
`reuse_user` task (which then copies) and by `plan` (which only reports). It lives on this side of
the judge boundary because a judgment's fingerprint covers the references."""

from __future__ import annotations

from dataclasses import dataclass, field

import mobilemem_judge
from mobilemem import fingerprints, reuse
from mobilemem.config import CandidatePreset
from mobilemem.dataset import JudgeQuestion, ScheduledUser
from mobilemem.records import JudgeSettingsFile


@dataclass
class UserMatch:
    memory: str  # this run's memory fingerprint of the user
    source: reuse.EarlierRun | None  # the first earlier run holding that complete memory
    answers: dict[str, tuple[str, str]] = field(default_factory=dict)  # question id -> (fingerprint, answer text)
    judgments: dict[str, str] = field(default_factory=dict)  # question id -> fingerprint


def match_user(earlier: list[reuse.EarlierRun], user: ScheduledUser, memory: str, preset: CandidatePreset,
               judge_questions: dict[str, JudgeQuestion], judge_settings: JudgeSettingsFile,
               judgments: bool = True) -> UserMatch:
    """The memory, then (only from that same earlier run) each successful answer and each judgment of
    the same fingerprints; `judgments=False` (rejudge) matches no judgment."""
    match = UserMatch(memory, reuse.find_memory(earlier, user.user_id, memory))
    for job in user.questions if match.source is not None else ():
        answer_id = fingerprints.answer_fingerprint(memory, job, preset)
        answer = reuse.find_answer(match.source.run, user.user_id, job.question_id, answer_id)
        if answer is None or answer.response is None:
            continue
        text = answer.response.answer or ""
        match.answers[job.question_id] = (answer_id, text)
        judgment_id = mobilemem_judge.judgment_fingerprint(judge_questions[job.question_id], text, judge_settings)
        if judgments and reuse.find_judgment(match.source.run, user.user_id, job.question_id, judgment_id):
            match.judgments[job.question_id] = judgment_id
    return match
