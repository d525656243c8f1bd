"""An exception a step did not expect is that step's gap with its true reason (DESIGN §8), at every
stage, whether it comes from writing a record or from anywhere else in the step; a question that
fails outside its steps cancels its running siblings, which become gaps saying why, before the
user's memory closes. No question ever has both an error.json and a score.

The faults here cannot be caused through HTTP, so each test patches the one function that raises
(the record writer of the steps, or one domain call inside a step) and says which."""

import asyncio

import pytest

import flows.mobilemem as flow_module
from e2e.runs import errors, run_cli, summary
from lifecycle import gaps
from mobilemem.records import ErrorFile
from mobilemem.rundir import RunDir, read_record
from mobilemem.simulator import FaultRule

pytestmark = pytest.mark.slow

QUESTIONS = [f"{u}_q_{n}" for u in range(3) for n in (1, 2, 3)]


def _outcomes(run: RunDir) -> dict[str, tuple[str, str] | str]:
    """Per question: ('stage', 'reason') of its gap, or 'scored'; a question with both fails here."""
    found = {}
    for qid in QUESTIONS:
        paths = run.user(int(qid.split("_")[0])).question(qid)
        assert not (paths.metrics.exists() and paths.error.exists()), f"{qid} has a score and an error.json"
        if paths.metrics.exists():
            found[qid] = "scored"
        elif paths.error.exists():
            gap = read_record(paths.error, ErrorFile)
            assert gap.failure.error_id in {e.id for e in errors(run)}, f"{qid}: its gap names no errors.jsonl line"
            found[qid] = (gap.stage, gap.reason)
    return found


def _expected(reason: str) -> dict[str, tuple[str, str] | str]:
    return {"0_q_1": ("answer", reason), "0_q_2": ("judge", reason), "0_q_3": ("judge", reason),
            **{f"1_q_{n}": ("history", f"ingest failed: {reason}") for n in (1, 2, 3)},
            **{f"2_q_{n}": ("index", reason) for n in (1, 2, 3)}}


def _one_failure_per_stage(code, run, reason, error_type):
    """The run scored nothing, each stage's injected failure is its gap and one errors.jsonl line."""
    assert code == 4  # no question was scored
    assert _outcomes(run) == _expected(reason)
    failed = [e for e in errors(run) if e.failure.label == error_type]
    assert sorted((e.stage, e.session_id or e.question_id or str(e.user_id)) for e in failed) == [
        ("answer", "0_q_1"), ("index", "2"), ("ingest", "1_2"), ("judge", "0_q_2"), ("judge", "0_q_3")]
    return failed


def test_a_record_that_cannot_be_written_is_its_steps_gap_at_every_stage(sim, sample_root, tmp_path, monkeypatch):
    failing = ("users/1/sessions/1_2.json", "users/2/index-response.json",
               "users/0/questions/0_q_1/answer-response.json", "users/0/questions/0_q_2/judgment.json",
               "users/0/questions/0_q_3/metrics.json")
    real_write = gaps.write_record

    def write_record(path, record):
        if path.as_posix().endswith(failing):  # as a lone surrogate in a field would
            raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed (injected)")
        real_write(path, record)

    monkeypatch.setattr(gaps, "write_record", write_record)
    code, run = run_cli(monkeypatch, sim, sample_root, tmp_path / "out")
    _one_failure_per_stage(code, run, "write error", "UnicodeEncodeError")
    assert not run.user(1).session("1_3").exists()  # the history stopped at the failed session
    assert summary(run).scored == 0


def test_any_exception_inside_a_step_is_its_gap_with_its_true_reason(sim, sample_root, tmp_path, monkeypatch):
    import tasks.answer
    import tasks.index
    import tasks.ingest
    import tasks.judge

    def failing(real, bad):
        def call(*args, **kwargs):
            if bad(*args):
                raise RuntimeError("an unexpected failure inside the step (injected)")
            return real(*args, **kwargs)
        return call

    from lifecycle.dashboard import Dashboard

    monkeypatch.setattr(tasks.answer.fingerprints, "answer_fingerprint", failing(
        tasks.answer.fingerprints.answer_fingerprint, lambda memory, job, preset: job.question_id == "0_q_1"))
    monkeypatch.setattr(tasks.judge, "overlap_scores", failing(
        tasks.judge.overlap_scores, lambda prediction, gold: True))  # 0_q_2 and 0_q_3, the only ones judged
    monkeypatch.setattr(tasks.index, "summarize", failing(tasks.index.summarize, lambda requests: _user_of_index() == 2))
    monkeypatch.setattr(Dashboard, "task_files", failing(  # the ingest step's link to its files, after the record
        Dashboard.task_files, lambda self, title, paths: title.startswith("session 1_2 ")))
    code, run = run_cli(monkeypatch, sim, sample_root, tmp_path / "out")
    failed = _one_failure_per_stage(code, run, "RuntimeError", "RuntimeError")
    assert all(e.failure.frames and "injected" in e.failure.message for e in failed)


def _user_of_index() -> int:
    """The user whose index is being built (the task run's name is `index-user-<id>`)."""
    from prefect.context import TaskRunContext

    return int(TaskRunContext.get().task_run.name.rsplit("-", 1)[1])


def test_a_failed_question_cancels_its_running_siblings_before_the_memory_closes(sim, sample_root, tmp_path,
                                                                              monkeypatch):
    """0_q_1 fails outside its steps once its siblings' answers are in flight (they hang in the
    simulator); they are cancelled, recorded as gaps saying why, and nothing is asked after."""
    from mobilemem.dataset import load_dataset

    user0 = load_dataset(sample_root).users[0].questions
    sim.faults = [FaultRule(role="answer", contains=q.question, kind="timeout", delay_s=10) for q in user0[1:]]
    real_question, closed = flow_module._question, []

    async def question(context, user, job, blocked, reused):
        if job.question_id != "0_q_1":
            return await real_question(context, user, job, blocked, reused)
        while sum(1 for r in sim.requests if r.role == "answer") < 2:  # both siblings are answering
            await asyncio.sleep(0.05)
        raise RuntimeError("a question failed outside its steps (injected)")

    real_close = flow_module.run_setup.close_user

    async def close_user(user):
        closed.append((user.user_id, len(sim.requests)))
        await real_close(user)

    monkeypatch.setattr(flow_module, "_question", question)
    monkeypatch.setattr(flow_module.run_setup, "close_user", close_user)
    code, run = run_cli(monkeypatch, sim, sample_root, tmp_path / "out", "--users", "0")
    assert code == 4  # no question was scored
    outcomes = _outcomes(run)
    assert set(outcomes) == {"0_q_1", "0_q_2", "0_q_3"}
    assert {outcomes[q] for q in ("0_q_1", "0_q_2", "0_q_3")} == {("answer", "orchestration failed: RuntimeError")}
    [(user_id, requests_at_close)] = closed
    assert user_id == 0 and len(sim.requests) == requests_at_close  # nothing was asked after the memory closed
    assert not [r for r in sim.requests if r.role == "judge"]
    [run_error] = [e for e in errors(run) if e.stage == "run"]
    assert run_error.failure.label == "RuntimeError" and "outside its steps" in run_error.failure.message
