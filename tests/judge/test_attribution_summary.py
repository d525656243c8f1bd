"""summary.json's evidence split: scored questions counted by their attribution.json, 2 x 2."""

from datetime import UTC, datetime

from mobilemem.config import load_config
from mobilemem.records import (AnswerResponse, AnswerResponseFile, AttributionFile, JudgmentFile, MetricsFile,
                               PlannedQuestion, RunFile, Usage)
from mobilemem.rundir import RunDir, write_record
from mobilemem.summary import summarize_run

NOW = datetime.now(UTC)

# question id -> (retrieved an evidence session, opened an evidence image, correct); None: no attribution.json
QUESTIONS = {
    "0_q_1": (False, False, False), "0_q_2": (False, False, True), "0_q_3": (False, False, False),
    "0_q_4": (True, False, True), "0_q_5": (True, False, False),
    "0_q_6": (False, True, False),
    "0_q_7": (True, True, True), "0_q_8": (True, True, True), "0_q_9": (True, True, False), "0_q_10": (True, True, True),
    "0_q_11": None,
}


def _scored(run: RunDir, question_id: str, correct: bool) -> None:
    q = run.user(0).question(question_id)
    label = "CORRECT" if correct else "WRONG"
    write_record(q.answer_response, AnswerResponseFile(
        started_at=NOW, finished_at=NOW, user_id=0, question_id=question_id, usage=Usage(), requests=[],
        response=AnswerResponse(success=True, answer="9", finished_reason="completed"), latency_s=0.1))
    write_record(q.judgment, JudgmentFile(started_at=NOW, finished_at=NOW, user_id=0, question_id=question_id,
                                          success=True, label=label, decided_by="json", raw_reply="{}",
                                          usage=Usage(), requests=[]))
    write_record(q.metrics, MetricsFile(user_id=0, question_id=question_id, llm_judge=int(correct), f1=0.0,
                                        bleu1=0.0, reference="9"))


def _attribution(run: RunDir, question_id: str, retrieved: bool, opened: bool, correct: bool,
                 images: list[str]) -> None:
    write_record(run.user(0).question(question_id).attribution, AttributionFile(
        user_id=0, question_id=question_id, evidence_sessions=["0_1"], evidence_images=images, images_read=[],
        evidence_hits=[], opened_evidence_image=opened, retrieved_evidence_session=retrieved,
        label="CORRECT" if correct else "WRONG"))


def test_the_two_by_two_split_counts_scored_questions_by_their_attribution(tmp_path):
    run = RunDir(tmp_path / "run")
    run.root.mkdir(parents=True)
    planned = [*QUESTIONS, "0_q_12"]
    write_record(run.run, RunFile(
        args={"dataset": "d", "output": "o"},
        config=load_config(), package_versions={}, git_commit=None, git_dirty=None, dataset_path="d",
        dataset_revision=None, data_sha256="0", questions_sha256="0", prompt_sha256={}, started_at=NOW,
        simulated=True, state="completed", users=[0],
        questions=[PlannedQuestion(user_id=0, question_id=q, language="en", difficulty=None, gold="9")
                   for q in planned]))
    for question_id, facts in QUESTIONS.items():
        _scored(run, question_id, correct=facts[2] if facts else True)
        if facts:
            _attribution(run, question_id, *facts, images=[] if question_id == "0_q_3" else ["image/uid0/a.png"])
    _attribution(run, "0_q_12", True, True, True, ["image/uid0/a.png"])  # not scored (no answer): not counted

    evidence = summarize_run(run.root)[0].evidence
    assert (evidence.attributed, evidence.unattributed, evidence.without_evidence_image) == (10, 1, 1)
    cells = {"retrieval_miss": (False, False, 3, 1), "retrieved_not_opened": (True, False, 2, 1),
             "opened_not_retrieved": (False, True, 1, 0), "retrieved_and_opened": (True, True, 4, 3)}
    for name, (retrieved, opened, questions, correct) in cells.items():
        cell = getattr(evidence, name)
        assert (cell.retrieved, cell.opened, cell.questions, cell.correct) == (retrieved, opened, questions, correct)
        assert cell.accuracy == correct / questions
    assert evidence.opened_answered_wrong == 2
