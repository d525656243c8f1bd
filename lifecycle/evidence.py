"""Evidence attribution of a scored question (issue 15), saved after its judgment as attribution.json.

The inputs a user's questions share are read once per user: its sessions are the run's dataset
view, and the notes each session wrote come from its sessions/*.json (final once the memory is
built, so the first question of the user to be judged reads them for all).
"""

from __future__ import annotations

from mobilemem.dataset import JudgeQuestion
from mobilemem.records import AnswerResponseFile, Label, SessionFile
from mobilemem.rundir import read_record, write_record
from mobilemem_judge.analysis.attribution import attribute
from lifecycle.context import RunContext, UserContext, lookup


def _session_notes(context: RunContext, user_id: int) -> dict[str, list[str]]:
    notes = context.session_notes.get(user_id)
    if notes is None:
        records = [read_record(p, SessionFile) for p in sorted(context.run.user(user_id).sessions.glob("*.json"))]
        notes = context.session_notes[user_id] = {r.session_id: r.notes_written for r in records}
    return notes


def save_attribution(user: UserContext, question: JudgeQuestion, label: Label) -> None:
    """Blocking (it reads files): run it in a thread. Raises on any failure; the caller records it."""
    context = lookup(user.run.root)
    paths = user.run.user(user.user_id).question(question.question_id)
    response = read_record(paths.answer_response, AnswerResponseFile).response
    record = attribute(question, response.tool_calls if response else [], context.scheduled(user.user_id).sessions,
                       _session_notes(context, user.user_id), label, response.retrieval if response else None)
    try:
        write_record(paths.attribution, record)
    except OSError as exc:
        user.disk.note(exc)  # a full disk stops the run, as for any other write
        raise
