import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mobilemem.errors import ConfigError
from mobilemem.failure_kinds import FailureKind
from mobilemem.records import ErrorLine, Failure, JobFile
from mobilemem.rundir import RunDir, append_error, model_dir_name, read_lines, read_record, write_record


def test_model_dir_name_replaces_unsafe_characters():
    assert model_dir_name("qwen3.8-max") == "qwen3.8-max"
    assert model_dir_name("org/model:latest v2") == "org_model_latest_v2"
    assert model_dir_name("..") == "__"


def test_paths_come_from_the_run_dir(tmp_path):
    run = RunDir.for_output(tmp_path, "a/b")
    assert run.root == tmp_path / "mobilemem" / "a_b"
    q = run.user(3).question("3_q_1")
    assert q.answer_response == run.root / "users" / "3" / "questions" / "3_q_1" / "answer-response.json"
    assert run.user(3).session("3_7") == run.root / "users" / "3" / "sessions" / "3_7.json"


def test_existing_run_dir_is_refused_untouched(tmp_path):
    run = RunDir.for_output(tmp_path, "m")
    run.claim()
    run.release_claim()
    (run.root / "keep.txt").write_text("x")
    with pytest.raises(ConfigError, match="already exists"):
        run.claim()
    assert [p.name for p in run.root.iterdir()] == ["keep.txt"]


def test_write_record_round_trips_and_leaves_no_temp_files(tmp_path):
    path = tmp_path / "q" / "job.json"
    job = JobFile(user_id=1, question_id="1_q_1", question="What colour?")
    write_record(path, job)
    write_record(path, job)
    assert read_record(path, JobFile) == job
    assert [p.name for p in path.parent.iterdir()] == ["job.json"]


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "job.json"
    write_record(path, JobFile(user_id=1, question_id="1_q_1", question="old"))

    class Exploding(JobFile):
        def model_dump_json(self, **kwargs):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_record(path, Exploding(user_id=1, question_id="1_q_1", question="new"))
    assert read_record(path, JobFile).question == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["job.json"]


def test_records_refuse_unknown_fields_and_newer_versions():
    with pytest.raises(ValueError):
        JobFile.model_validate({"user_id": 1, "question_id": "q", "question": "x", "answer": "leak"})
    with pytest.raises(ValueError):
        JobFile.model_validate({"schema_version": 3, "user_id": 1, "question_id": "q", "question": "x"})


def _line(i: int, stage: str = "answer") -> ErrorLine:
    return ErrorLine(id=f"e{i}", time=datetime.now(UTC), stage=stage, 
                     failure=Failure(kind=FailureKind.EXCEPTION, exception="X", message="r" * 5000))


def test_error_appends_are_whole_lines_under_concurrency(tmp_path):
    run = RunDir(tmp_path)
    threads = [threading.Thread(target=lambda i=i: [append_error(run, _line(i * 100 + k)) for k in range(50)])
               for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = read_lines(run.errors, ErrorLine)
    assert sorted(line.id for line in lines) == sorted(f"e{i * 100 + k}" for i in range(8) for k in range(50))
    append_error(run, _line(1, stage="cleanup"))
    assert [line.id for line in read_lines(run.cleanup_errors, ErrorLine)] == ["e1"]


@pytest.mark.parametrize("case", ["file", "read_only", "taken"])
def test_a_run_directory_that_cannot_be_claimed_is_refused_in_one_line(tmp_path, case):
    output = tmp_path / "out"
    if case == "file":
        output.write_text("not a folder")
    if case == "read_only":  # a read-only filesystem, as root cannot be refused by permissions
        output = Path("/proc/self/out")
    run = RunDir.for_output(output, "m")
    if case == "taken":
        run.root.mkdir(parents=True)
        run.claim_file.write_text("999999")
    with pytest.raises(ConfigError) as refused:
        run.claim()
    assert "\n" not in str(refused.value) and str(run.root) in str(refused.value)
    assert ("another run (pid 999999)" in str(refused.value)) == (case == "taken")
    if case == "file":
        assert output.read_text() == "not a folder" and "is not a directory" in str(refused.value)


def test_claiming_is_atomic_and_reentrant_for_the_claiming_process(tmp_path):
    run = RunDir.for_output(tmp_path, "m")
    run.claim()
    run.claim()  # the flow re-runs preflight in the CLI's process
    assert [p.name for p in run.root.iterdir()] == [".claim"]
    run.release_claim()
    assert list(run.root.iterdir()) == []


def test_a_folder_is_a_run_when_it_holds_run_json(tmp_path):
    run = RunDir(tmp_path / "run")
    assert not run.is_run()  # no folder
    run.root.mkdir()
    assert not run.is_run()
    (run.root / "run.json").mkdir()  # a folder by that name is not a run's file
    assert not run.is_run()
    (run.root / "run.json").rmdir()
    (run.root / "run.json").write_text("{}")
    assert run.is_run() and run.report == run.root / "report.html"
