"""A memory's manifest and the copy that checks it (issue 22), on a small memory written here: every
way one file can differ is named in one line, the copy is discarded, and the earlier files stay
as they were. The runs themselves: tests/e2e/test_reuse_trust.py."""

import os
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from mobilemem import memory_manifest, reuse
from mobilemem.records import IndexResponseFile, ManifestEntry, MemoryUsageFile, SessionFile, Usage
from mobilemem.run_reader import RunReader
from mobilemem.rundir import RunDir, write_record

NOW = datetime.now(UTC)


@pytest.fixture
def memory(tmp_path) -> reuse.Memory:
    run = RunDir(tmp_path / "earlier")
    user = run.user(0)
    for relative, data in (("daily/2024-03-17.md", b"# a day\n"), ("session/images/0_1/a.png", b"\x89PNG..."),
                           ("metadata/keyword_index/bm25.pkl", b"index")):
        (user.workspace / relative).parent.mkdir(parents=True, exist_ok=True)
        (user.workspace / relative).write_bytes(data)
    write_record(user.session("0_1"), SessionFile(started_at=NOW, finished_at=NOW, user_id=0, session_id="0_1",
                                                  success=True, usage=Usage(), requests=[]))
    write_record(user.index_response, IndexResponseFile(started_at=NOW, finished_at=NOW, user_id=0, success=True))
    usage = MemoryUsageFile(user_id=0, sessions=1, usage=Usage(), manifest=memory_manifest.build(user))
    write_record(user.memory_usage, usage)
    return reuse.Memory(reuse.EarlierRun(RunReader(run), None), usage)


def _files(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


def test_the_manifest_lists_every_file_of_the_memory_and_nothing_else(memory):
    assert [e.path for e in memory.usage.manifest] == [
        "index-response.json", "sessions/0_1.json", "workspace/daily/2024-03-17.md",
        "workspace/metadata/keyword_index/bm25.pkl", "workspace/session/images/0_1/a.png"]


def test_an_intact_memory_is_copied_with_write_once_files_linked(memory, tmp_path):
    target = RunDir(tmp_path / "new")
    assert reuse.copy_memory(memory, target, 0) is None
    theirs, mine = memory.source.run.user(0), target.user(0)
    assert _files(mine.root) == _files(theirs.root)
    image = "workspace/session/images/0_1/a.png"
    assert os.stat(mine.root / image).st_ino == os.stat(theirs.root / image).st_ino  # write-once: a hard link
    index = "workspace/metadata/keyword_index/bm25.pkl"
    assert os.stat(mine.root / index).st_ino != os.stat(theirs.root / index).st_ino  # ReMe rewrites it: a copy


def _link(path):
    outside = path.parents[5] / "outside.md"
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)


def _fifo(path):
    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize(("damage", "why"), [
    (lambda p: p.unlink(), "is missing"),
    (lambda p: p.write_bytes(b"# another day, longer\n"), "is 22 bytes, its manifest says 8"),
    (lambda p: p.write_bytes(b"# A DAY\n"), "its sha256 differs from its manifest's"),
    (_link, "is a symbolic link: not followed"),
    (_fifo, "is not a regular file"),
])
def test_the_first_differing_file_is_named_and_the_copy_discarded(memory, tmp_path, damage, why):
    path = memory.source.run.user(0).workspace / "daily" / "2024-03-17.md"
    damage(path)
    before = _files(memory.source.run.root)
    target = RunDir(tmp_path / "new")
    assert reuse.copy_memory(memory, target, 0) == f"{path}: {why}"
    assert _files(target.root) == {}  # nothing of the copy is left; the memory is built again
    assert _files(memory.source.run.root) == before


def test_a_linked_workspace_is_not_entered(memory, tmp_path):
    workspace = memory.source.run.user(0).workspace
    workspace.rename(tmp_path / "elsewhere")
    workspace.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert reuse.copy_memory(memory, RunDir(tmp_path / "new"), 0) == f"{workspace}: is a symbolic link: not followed"


@pytest.mark.parametrize("path", ["../x", "workspace/../../x", "/etc/passwd", "workspace", "questions/q/job.json",
                                  "workspace//x", "index-response.json/x"])
def test_a_manifest_path_outside_the_memory_does_not_validate(path):
    with pytest.raises(ValidationError):
        ManifestEntry(path=path, size=1, sha256="0" * 64)


def test_a_manifest_listing_a_file_twice_does_not_validate(memory):
    twice = [*memory.usage.manifest, memory.usage.manifest[0]]
    with pytest.raises(ValidationError, match="listed twice"):
        MemoryUsageFile(user_id=0, sessions=1, usage=Usage(), manifest=twice)
