import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mobilemem.candidate.workspace import Workspace
from mobilemem.errors import WorkspaceEscape


@pytest.fixture
def two_users(tmp_path):
    mine = Workspace(tmp_path / "users" / "1" / "workspace").create()
    other = Workspace(tmp_path / "users" / "2" / "workspace").create()
    (other.daily / "secret.md").write_text("the other user's note")
    (mine.daily / "note.md").write_text("mine")
    (mine.trajectories / "answer-1_q_1.json").write_text("{}")
    return mine, other


def test_memory_paths_resolve_inside_memory(two_users):
    mine, _ = two_users
    assert mine.resolve("daily/note.md") == mine.daily / "note.md"
    assert mine.resolve("memory/daily/note.md") == mine.daily / "note.md"
    assert mine.resolve("./daily//note.md") == mine.daily / "note.md"


@pytest.mark.parametrize("path", [
    "/etc/passwd", "~/x", "../trajectories/answer-1_q_1.json", "daily/../../trajectories/x.json",
    "../../2/workspace/memory/daily/secret.md", "file:///etc/passwd", "file://daily/note.md",
    "http://example.invalid/x", "daily/%2e%2e/%2e%2e/x", "%2Fetc%2Fpasswd", "daily\\..\\..\\x",
    "C:\\Windows\\win.ini", "daily/note.md\x00.png", "daily/\nnote.md", "", "   ", "a" * 1001,
])
def test_escapes_are_refused_with_a_clear_reason(two_users, path):
    mine, _ = two_users
    with pytest.raises(WorkspaceEscape) as info:
        mine.resolve(path)
    assert str(info.value)


def test_symlinks_leading_out_are_refused(two_users):
    mine, other = two_users
    os.symlink(other.daily / "secret.md", mine.daily / "planted.md")
    os.symlink(mine.trajectories, mine.memory / "traj")
    os.symlink(mine.daily / "note.md", mine.daily / "alias.md")
    for path in ("daily/planted.md", "traj/answer-1_q_1.json"):
        with pytest.raises(WorkspaceEscape, match="outside memory"):
            mine.resolve(path)
    assert mine.resolve("daily/alias.md") == mine.daily / "alias.md"  # a link inside memory is fine


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("ab./\\%2eEf:~\x00 -_") + ["..", "memory", "daily", "/"]), max_size=20).map("".join))
def test_any_path_resolves_inside_memory_or_is_refused(tmp_path_factory, path):
    ws = Workspace(tmp_path_factory.getbasetemp() / "prop" / "workspace")
    ws.create()
    try:
        target = ws.resolve(path)
    except WorkspaceEscape:
        return
    assert target.resolve().is_relative_to(ws.memory.resolve())
