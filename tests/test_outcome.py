"""lifecycle.outcome.save: a write error is the step's own failure, recorded where it still can be."""

import errno
from types import SimpleNamespace

from mobilemem.disk import DiskGuard
from mobilemem.records import ErrorLine, JobFile
from mobilemem.rundir import RunDir, read_lines
from lifecycle.gaps import save


def _user(tmp_path):
    run = RunDir(tmp_path / "run")
    run.root.mkdir()
    return SimpleNamespace(run=run, disk=DiskGuard(run.root, 0))


def test_a_write_error_is_returned_recorded_and_does_not_raise(tmp_path):
    user = _user(tmp_path)
    (user.run.root / "users").write_text("a file where a folder must be")  # ENOTDIR for every record below
    error = save(user, user.run.user(0).question("0_q_1").job, JobFile(user_id=0, question_id="0_q_1", question="q"),
                 stage="answer", user_id=0, question_id="0_q_1")
    assert error is not None and error.stage == "answer" and error.question_id == "0_q_1"
    assert [line.id for line in read_lines(user.run.errors, ErrorLine)] == [error.id]
    assert user.disk.reason is None  # not a full disk: the run goes on


def test_a_full_disk_stops_the_run(tmp_path):
    user = _user(tmp_path)
    user.disk.note(OSError(errno.ENOSPC, "No space left on device"))
    assert user.disk.stopped() and "full" in user.disk.reason
