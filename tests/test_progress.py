"""A user's row in the dashboard's tables: queued until its subflow holds a user slot (issue 24)."""

from lifecycle.dashboard import UserProgress


def test_a_user_is_queued_until_its_subflow_holds_a_user_slot():
    progress = UserProgress(user_id=3, sessions=2, questions=1)
    assert progress.row()["status"] == "queued"
    progress.start()
    assert progress.row()["status"] == "running"
    progress.finish()
    assert progress.row()["status"] == "finished"
