"""`--reuse E` reads E without trusting it (issue 22): one fault-free run E of the sample, then for
each test a copy of E damaged the way shared run directories get damaged (symlinks, truncated
records, two users' workspaces swapped, an --output inside it). Each test checks what B redid (from the
simulator's requests), the one line naming the damage, that E is unchanged (kind, mode and content
of every entry, links not followed), and that nothing outside E was read or copied (a sentinel's
bytes, inodes, atimes)."""

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from damage import SENTINEL, copy_run, link_outside, snapshot, truncate
from e2e.runs import run_cli, summary
from cli import main
from mobilemem import memory_manifest
from mobilemem.records import JobFile, MemoryUsageFile, ReuseFile, RunFile
from mobilemem.rundir import RunDir, read_record

pytestmark = pytest.mark.slow
MONTH_S = 30 * 24 * 3600


class Outside:
    """A folder outside E that E's links point into (`damage.link_outside`, which leaves the sentinel
    in a linked folder); `arm` sets every entry's atime before its mtime, so that any read of it
    moves the atime (relatime) and shows."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir()

    def link(self, path: Path, name: str) -> None:
        link_outside(path, self.root / name, b"" if path.is_dir() else path.read_bytes())

    def arm(self) -> dict[str, int]:
        for path in [self.root, *self.root.rglob("*")]:
            info = os.stat(path)
            os.utime(path, ns=(info.st_mtime_ns - 10**12, info.st_mtime_ns))
        return self.atimes()

    def atimes(self) -> dict[str, int]:
        return {str(p): os.stat(p).st_atime_ns for p in [self.root, *self.root.rglob("*")]}

    def inodes(self) -> set[tuple[int, int]]:
        return {(os.stat(p).st_dev, os.stat(p).st_ino) for p in self.root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def earlier(sample_root, simulator, tmp_path_factory) -> RunDir:
    simulator.reset()
    with pytest.MonkeyPatch.context() as mp:
        code, run = run_cli(mp, simulator, sample_root, tmp_path_factory.mktemp("earlier"))
    simulator.reset()
    assert code == 0 and summary(run).scored == 9
    return run


@pytest.fixture
def damaged(earlier, tmp_path) -> RunDir:
    """A private copy of E for the test to damage (same layout: OUT/mobilemem/<model>)."""
    return RunDir(copy_run(earlier.root, tmp_path / "e" / earlier.root.relative_to(earlier.root.parents[1])))


def reuse(monkeypatch, simulator, sample_root, output: Path, source: RunDir):
    simulator.reset()
    code, run = run_cli(monkeypatch, simulator, sample_root, output, "--reuse", str(source.root))
    requests = simulator.requests
    simulator.reset()
    return code, run, requests


def ingested_users(requests) -> set[int]:
    return {int(u) for r in requests if r.role == "ingest"
            for u in re.findall(r"session_id=(\d+)_\d+ date=", json.dumps(r.body))}


def asked(requests, run: RunDir, role: str) -> set[str]:
    """The question ids whose text a request of `role` carried."""
    texts = {q.question_id: read_record(run.user(q.user_id).question(q.question_id).job, JobFile).question
             for q in read_record(run.run, RunFile).questions}
    bodies = [json.dumps(r.body, ensure_ascii=False) for r in requests if r.role == role]
    return {qid for qid, text in texts.items() if any(text in body for body in bodies)}


def skipped(run: RunDir, user_id: int) -> list[str]:
    return read_record(run.user(user_id).reuse, ReuseFile).skipped


def assert_nothing_from_outside(run: RunDir, outside: Outside, armed: dict[str, int]) -> None:
    inodes = outside.inodes()
    for path in run.root.rglob("*"):
        assert not path.is_symlink(), path
        if path.is_file():
            assert (path.stat().st_dev, path.stat().st_ino) not in inodes, path
            assert SENTINEL.encode() not in path.read_bytes(), path
    assert outside.atimes() == armed  # nothing outside E was even read


def test_links_in_the_earlier_run_are_never_followed(damaged, sample_root, simulator, tmp_path, monkeypatch):
    outside = Outside(tmp_path / "outside")
    outside.link(damaged.user(0).workspace, "workspace-0")
    outside.link(damaged.user(1).sessions, "sessions-1")
    outside.link(damaged.user(2).index_response, "index-response-2.json")
    armed, before = outside.arm(), snapshot(damaged.root)
    code, run, requests = reuse(monkeypatch, simulator, sample_root, tmp_path / "b", damaged)
    assert code == 0 and summary(run).scored == 9
    assert ingested_users(requests) == {0, 1, 2}  # every memory built again
    for user_id, linked in ((0, damaged.user(0).workspace), (1, damaged.user(1).sessions),
                            (2, damaged.user(2).index_response)):
        assert skipped(run, user_id) == [f"{linked}: is a symbolic link: not followed: that memory is not reused"]
        assert read_record(run.user(user_id).reuse, ReuseFile).memory is None
    assert f"reuse, user 0: {damaged.user(0).workspace}: is a symbolic link" in run.log.read_text()
    assert_nothing_from_outside(run, outside, armed)
    assert snapshot(damaged.root) == before


def test_a_damaged_item_is_redone_and_its_neighbours_reused(damaged, sample_root, simulator, tmp_path,
                                                            monkeypatch):
    outside = Outside(tmp_path / "outside")
    truncate(damaged.user(0).question("0_q_1").answer_response)
    truncate(damaged.user(1).memory_usage)
    outside.link(damaged.user(2).question("2_q_1").judgment, "judgment.json")
    truncate(damaged.user(2).question("2_q_2").metrics)
    for state in damaged.root.glob("users/*/workspace/mem_session/agentscope/*.jsonl"):  # a run of months ago
        os.utime(state, (state.stat().st_atime - MONTH_S, state.stat().st_mtime - MONTH_S))
    armed, before = outside.arm(), snapshot(damaged.root)
    code, run, requests = reuse(monkeypatch, simulator, sample_root, tmp_path / "b", damaged)
    assert code == 0 and summary(run).scored == 9 and not summary(run).gaps
    assert ingested_users(requests) == {1}
    assert asked(requests, run, "answer") == {"0_q_1", "1_q_1", "1_q_2", "1_q_3"}
    assert asked(requests, run, "judge") == {"0_q_1", "1_q_1", "1_q_2", "1_q_3", "2_q_1", "2_q_2"}
    q0, q2 = damaged.user(0).question, damaged.user(2).question
    [line] = skipped(run, 0)
    assert line.startswith(f"{q0('0_q_1').answer_response}: not valid JSON (truncated or edited)")
    assert line.endswith(": the question is answered again")
    [line] = skipped(run, 1)
    assert line.startswith(f"{damaged.user(1).memory_usage}: not valid JSON")
    assert line.endswith(": that memory is not reused")
    linked, truncated = skipped(run, 2)
    assert linked == f"{q2('2_q_1').judgment}: is a symbolic link: not followed: the answer is judged again"
    assert truncated.startswith(f"{q2('2_q_2').metrics}: not valid JSON")
    assert truncated.endswith(": the answer is judged again")
    reused = {u: read_record(run.user(u).reuse, ReuseFile) for u in (0, 2)}
    assert set(reused[0].answers) == {"0_q_2", "0_q_3"} and set(reused[0].judgments) == {"0_q_2", "0_q_3"}
    assert set(reused[2].answers) == {"2_q_1", "2_q_2", "2_q_3"} and set(reused[2].judgments) == {"2_q_3"}
    for user_id in (0, 2):  # a reused memory stays whole in B (ReMe's session cleanup kept off), so reusable again
        manifest = read_record(run.user(user_id).memory_usage, MemoryUsageFile).manifest
        now = {e.path: e for e in memory_manifest.build(run.user(user_id))}
        assert [e.path for e in manifest if now.get(e.path) != e] == []
    assert_nothing_from_outside(run, outside, armed)
    assert snapshot(damaged.root) == before


def test_swapped_workspaces_are_caught_by_the_manifest(damaged, sample_root, simulator, tmp_path, monkeypatch):
    first, third = damaged.user(0).workspace, damaged.user(2).workspace
    first.rename(tmp_path / "swap")
    third.rename(first)
    (tmp_path / "swap").rename(third)
    before = snapshot(damaged.root)
    code, run, requests = reuse(monkeypatch, simulator, sample_root, tmp_path / "b", damaged)
    assert code == 0 and summary(run).scored == 9
    assert ingested_users(requests) == {0, 2}
    assert asked(requests, run, "answer") == {f"{u}_q_{i}" for u in (0, 2) for i in (1, 2, 3)}
    for user_id in (0, 2):  # the first file of the manifest that differs on disk is named
        manifest = read_record(damaged.user(user_id).memory_usage, MemoryUsageFile).manifest
        assert skipped(run, user_id) == [f"{first_difference(damaged.user(user_id).root, manifest)}: "
                                         f"that memory is not reused"]
    assert read_record(run.user(1).reuse, ReuseFile).memory is not None and skipped(run, 1) == []
    assert snapshot(damaged.root) == before


def first_difference(root: Path, manifest) -> str:
    for entry in manifest:
        path = root / entry.path
        if not path.exists():
            return f"{path}: is missing"
        if path.stat().st_size != entry.size:
            return f"{path}: is {path.stat().st_size} bytes, its manifest says {entry.size}"
        if hashlib.sha256(path.read_bytes()).hexdigest() != entry.sha256:
            return f"{path}: its sha256 differs from its manifest's"
    raise AssertionError("no file differs")


@pytest.mark.parametrize("inside", ["users/0/workspace/session", ".", "users"])
def test_an_output_inside_the_earlier_run_is_refused(damaged, sample_root, simulator, tmp_path, monkeypatch,
                                                     capsys, inside):
    before = snapshot(damaged.root)
    output = damaged.root / inside
    monkeypatch.setenv("LLM_API_KEY", "sk-reuse-inside")
    monkeypatch.setenv("LLM_BASE_URL", simulator.base_url)
    code = main(["--dataset", str(sample_root), "--output", str(output), "--reuse", str(damaged.root)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and simulator.requests == []
    assert err == [f"mobilemem: refused to start: --reuse {damaged.root}: --output {output} would write inside "
                   f"that run ({output.resolve()}): an earlier run is never changed, choose an --output outside it"]
    assert snapshot(damaged.root) == before


def test_a_damaged_run_json_is_refused_in_one_line(damaged, sample_root, simulator, tmp_path, monkeypatch, capsys):
    truncate(damaged.run)
    before = snapshot(damaged.root)
    monkeypatch.setenv("LLM_API_KEY", "sk-reuse-run-json")
    monkeypatch.setenv("LLM_BASE_URL", simulator.base_url)
    code = main(["--dataset", str(sample_root), "--output", str(tmp_path / "b"), "--reuse", str(damaged.root)])
    [line] = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and not (tmp_path / "b").exists()
    assert line.startswith(f"mobilemem: refused to start: --reuse {damaged.root}: {damaged.run}: not valid JSON")
    assert snapshot(damaged.root) == before
