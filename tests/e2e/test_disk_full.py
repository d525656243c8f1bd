"""A full disk: the run stops starting new work, keeps every file it wrote whole, and exits 3 in one
line (a real tmpfs that fills up; skipped where mounting is not permitted)."""

import json
import subprocess

import pytest

from e2e.runs import run_cli
from mobilemem.records import ErrorLine, RunFile, SummaryFile
from mobilemem.rundir import read_lines, read_record

pytestmark = pytest.mark.slow


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mount)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}): the disk-full test "
                    "needs root and permission to mount")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


def _config(tmp_path, text: str):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return str(path)


def test_a_disk_that_fills_up_stops_the_run_and_loses_nothing(small_disk, sample_root, simulator, monkeypatch,
                                                              capsys, tmp_path):
    simulator.reset()
    code, run = run_cli(monkeypatch, simulator, sample_root, small_disk, "--user-concurrency", "1",
                        "--config", _config(tmp_path, "min_free_disk_mb: 0\n"))
    simulator.reset()
    err = capsys.readouterr().err
    assert code == 3 and "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("mobilemem:")] == [
        f"mobilemem: stopped early: the disk is full; every result written so far is kept in {run.root} (exit 3)"]
    for path in run.root.rglob("*.json"):  # every file that exists is whole
        json.loads(path.read_bytes())
    read_lines(run.errors, ErrorLine)
    assert read_record(run.run, RunFile).state in ("interrupted_by_error", "running")
    scored = [p for p in run.root.rglob("metrics.json")]
    if run.summary.exists():
        assert read_record(run.summary, SummaryFile).scored == len(scored)


def test_below_the_free_space_floor_nothing_new_starts(sample_root, simulator, monkeypatch, capsys, tmp_path):
    simulator.reset()
    code, run = run_cli(monkeypatch, simulator, sample_root, tmp_path / "out",
                        "--config", _config(tmp_path, "min_free_disk_mb: 100000000\n"))
    assert code == 3 and not simulator.requests  # not one request was spent
    summary = read_record(run.summary, SummaryFile)
    assert summary.state == "interrupted_by_error" and summary.expected == 9 and summary.scored == 0
    assert read_record(run.run, RunFile).state == "interrupted_by_error"
    assert not list(run.root.rglob("job.json")) and not list(run.root.rglob("sessions/*.json"))
    assert "the disk is full" in capsys.readouterr().err
