"""Hand-made run directories for the `compare` tests: run.json, results.jsonl and job.json built
with the record models, nothing else."""

from datetime import UTC, datetime
from pathlib import Path

from mobilemem.config import load_config
from mobilemem.records import JobFile, ResultLine, RunFile
from mobilemem.rundir import RunDir, append_line, write_record

DATA_SHA = "d" * 64
QUESTIONS_SHA = "q" * 64
IMAGES_SHA = "i" * 64
# (user, question, language, difficulty): user 0 is English, user 1 Chinese
QUESTIONS = [(0, "0_q_1", "en", "easy"), (0, "0_q_2", "en", "medium"), (0, "0_q_3", "en", "easy"),
             (1, "1_q_1", "Chinese", "easy"), (1, "1_q_2", "Chinese", None), (1, "1_q_3", "Chinese", "medium")]


def result(user_id: int, question_id: str, language: str, difficulty: str | None, *, correct: bool = True,
           status: str = "scored", f1: float = 0.5, bleu1: float = 0.25) -> ResultLine:
    scored = status == "scored"
    return ResultLine(user_id=user_id, question_id=question_id, language=language, difficulty=difficulty,
                      status=status, prediction=(f"right {question_id}" if correct else f"wrong {question_id}")
                      if status in ("scored", "judge") else None,
                      gold=[f"gold {question_id}"], label=("CORRECT" if correct else "WRONG") if scored else None,
                      f1=f1 if scored else None, bleu1=bleu1 if scored else None, answer_tokens=100,
                      answer_latency_s=0.5)


def make_run(root: Path, lines: list[ResultLine], *, run_id: str | None = "aaaaaaaa-1111",
             started_at: datetime = datetime(2026, 12, 1, 10, tzinfo=UTC), model: str = "model-a",
             data_sha256: str = DATA_SHA, questions_sha256: str = QUESTIONS_SHA, jobs: bool = True,
             images_sha256: dict[str, str] | None = None) -> Path:
    """`images_sha256`: by default IMAGES_SHA for every user of `lines`."""
    run = RunDir(root)
    users = sorted({line.user_id for line in lines})
    write_record(run.run, RunFile(
        args={"dataset": "d", "output": "o"},
        config=load_config().model_copy(update={"model": model}), package_versions={}, git_commit=None, git_dirty=None,
        dataset_path="/data/MobileMem-Omni", dataset_revision=None, data_sha256=data_sha256,
        questions_sha256=questions_sha256, prompt_sha256={}, started_at=started_at, finished_at=started_at,
        images_sha256={str(u): IMAGES_SHA for u in users} if images_sha256 is None else images_sha256,
        flow_run_id=run_id, simulated=True, state="completed", users=users))
    run.results.write_bytes(b"")
    for line in lines:
        append_line(run.results, line)
        if jobs:
            write_record(run.user(line.user_id).question(line.question_id).job, JobFile(
                user_id=line.user_id, question_id=line.question_id, question=f"What was shown in {line.question_id}?"))
    return root


def all_correct(**changes: dict) -> list[ResultLine]:
    """Every question of QUESTIONS, correct with F1 0.5 and BLEU-1 0.25 unless `changes[qid]` says otherwise."""
    return [result(*q, **changes.get(q[1], {})) for q in QUESTIONS]
