"""Content, not size (issue 22): run A on a dataset, then B with `--reuse A` on a copy in which one
image of user 0 shows another digit in a file of the same byte size. B builds user 0's memory
again (answering from the new pixels) and reuses user 2's; `compare A B` refuses in one line."""

import json

import pytest

from e2e.runs import run_cli, summary
from cli import main
from mobilemem.records import ReuseFile, ResultLine, RunFile
from mobilemem.rundir import read_lines, read_record
from pixel_edit import pixel_variants

pytestmark = pytest.mark.slow
QUESTION = "0_q_3"  # asks for the digit of the image that is edited


@pytest.fixture(scope="module")
def runs(sample_root, simulator, tmp_path_factory):
    out = tmp_path_factory.mktemp("reuse-images")
    first, second, _ = pixel_variants(sample_root, out / "datasets", QUESTION)
    simulator.reset()
    with pytest.MonkeyPatch.context() as mp:
        code_a, run_a = run_cli(mp, simulator, first, out / "a", "--users", "0,2")
    simulator.reset()
    with pytest.MonkeyPatch.context() as mp:
        code_b, run_b = run_cli(mp, simulator, second, out / "b", "--users", "0,2", "--reuse", str(run_a.root))
    requests = simulator.requests
    simulator.reset()
    assert code_a == 0 and code_b == 0
    return run_a, run_b, requests


def _labels(run) -> dict[str, str | None]:
    return {line.question_id: line.label for line in read_lines(run.results, ResultLine)}


def test_the_user_whose_image_changed_is_built_again_and_the_other_reused(runs):
    run_a, run_b, requests = runs
    assert not run_b.user(0).reuse.exists()  # nothing of user 0 was copied
    assert read_record(run_b.user(2).reuse, ReuseFile).memory.run_dir == str(run_a.root)
    reused = summary(run_b).usage.reused
    assert reused.users == 1 and reused.sessions == 4
    ingested = [json.dumps(r.body, ensure_ascii=False) for r in requests if r.role == "ingest"]
    assert ingested and all("session_id=0_" in body for body in ingested)


def test_the_new_pixels_are_what_b_answers_from(runs):
    run_a, run_b, _ = runs
    assert _labels(run_a)[QUESTION] == "CORRECT"  # the gold is the digit the first copy shows
    assert _labels(run_b)[QUESTION] == "WRONG"  # the second shows another: a stale memory would say CORRECT


def test_compare_refuses_the_two_runs_naming_the_user(runs, capsys):
    run_a, run_b, _ = runs
    a, b = read_record(run_a.run, RunFile), read_record(run_b.run, RunFile)
    assert a.images_sha256["2"] == b.images_sha256["2"] and a.images_sha256["0"] != b.images_sha256["0"]
    capsys.readouterr()
    assert main(["compare", str(run_a.root), str(run_b.root)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.splitlines() == [
        f"mobilemem: compare: the runs evaluated different datasets: the images of user 0 differ: images_sha256 "
        f"{a.images_sha256['0']} in {run_a.root} vs {b.images_sha256['0']} in {run_b.root}"]
    assert not list(run_a.root.glob("compare-*")) and not list(run_b.root.glob("compare-*"))
