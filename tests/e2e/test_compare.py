"""`compare` on real runs of the sample: the fault-free run against itself (nothing differs), against a
run whose simulator answered two chosen questions wrongly (exactly those flip), and against a run
of a changed dataset (refused)."""

import json
import shutil

import pytest

from e2e.runs import run_cli, summary
from cli import main
from mobilemem.dataset import load_dataset
from mobilemem.records import CompareFile, ResultLine, RunFile
from mobilemem.rundir import read_lines, read_record
from mobilemem.simulator import FaultRule
from mobilemem.simulator.faults import WRONG_ANSWER

pytestmark = pytest.mark.slow


def _written(folder) -> dict[str, CompareFile]:
    """The compare-*.json files of a folder, each with its HTML page next to it."""
    pages = {p.name for p in folder.glob("compare-*.html")}
    files = {p.name: read_record(p, CompareFile) for p in folder.glob("compare-*.json")}
    assert pages == {name.removesuffix(".json") + ".html" for name in files}
    return files


@pytest.fixture(scope="module")
def run_a(baseline_run, tmp_path_factory):
    """A private copy of the fault-free run (the session's baseline stays as it was)."""
    code, run, _, _ = baseline_run
    assert code == 0 and summary(run).overall.accuracy == 1.0
    return shutil.copytree(run.root, tmp_path_factory.mktemp("compare-a") / "run", symlinks=True)


@pytest.fixture(scope="module")
def wrong_run(sample_root, simulator, tmp_path_factory):
    dataset = load_dataset(sample_root)
    chosen = [dataset.users[0].questions[1], dataset.users[1].questions[2]]  # one English, one Chinese
    simulator.reset()
    simulator.faults = [FaultRule(role="answer", contains=q.question, kind="wrong_answer") for q in chosen]
    with pytest.MonkeyPatch.context() as mp:
        code, run = run_cli(mp, simulator, sample_root, tmp_path_factory.mktemp("compare-b"))
    simulator.reset()
    assert code == 0
    return run, {(q.user_id, q.question_id) for q in chosen}


def test_a_run_against_itself_reports_no_difference(run_a, capsys):
    capsys.readouterr()
    assert main(["compare", str(run_a), str(run_a)]) == 0
    [(name, compared)] = _written(run_a).items()
    run_id = read_record(run_a / "run.json", RunFile).flow_run_id
    assert name == f"compare-{run_id[:8]}-vs-{run_id[:8]}.json"
    assert compared.overall.compared == 9 and compared.run_a.scored_only_here == 0
    for score in (compared.overall.accuracy, compared.overall.f1, compared.overall.bleu1):
        assert (score.difference, score.low, score.high) == (0.0, 0.0, 0.0)
    assert compared.overall.mcnemar.p_value is None
    assert all(g.accuracy.difference == 0.0 for g in [*compared.by_language.values(),
                                                      *compared.by_difficulty.values()])
    assert compared.correct_only_in_a == [] and compared.correct_only_in_b == []
    assert "flipped: 0 correct in A only, 0 correct in B only" in capsys.readouterr().out


def test_injected_wrong_answers_are_exactly_the_flips(run_a, wrong_run, capsys):
    run_b, chosen = wrong_run
    wrong = {(line.user_id, line.question_id) for line in read_lines(run_b.results, ResultLine)
             if line.label == "WRONG"}
    assert wrong == chosen
    before = set(run_a.glob("compare-*"))
    assert main(["compare", str(run_a), str(run_b.root)]) == 0
    assert set(run_a.glob("compare-*")) == before  # B started later: the files are B's
    [compared] = _written(run_b.root).values()
    assert {(f.user_id, f.question_id) for f in compared.correct_only_in_a} == chosen
    assert compared.correct_only_in_b == []
    assert all(f.prediction_b == WRONG_ANSWER and f.question for f in compared.correct_only_in_a)
    overall = compared.overall
    assert (overall.compared, overall.mcnemar.only_a_correct, overall.mcnemar.only_b_correct) == (9, 2, 0)
    assert overall.accuracy.difference == pytest.approx(-2 / 9) and overall.mcnemar.p_value == pytest.approx(0.5)
    assert {name: g.mcnemar.only_a_correct for name, g in compared.by_language.items()} == {"Chinese": 1, "en": 1}
    out = capsys.readouterr().out
    assert "accuracy 1.0000 -> 0.7778 (-0.2222 [" in out and "flipped: 2 correct in A only" in out


def test_runs_of_different_datasets_are_refused(run_a, sample_copy, simulator, tmp_path, capsys):
    questions = sample_copy / "questions.jsonl"
    records = [json.loads(line) for line in questions.read_text(encoding="utf-8").splitlines()]
    records[0]["questions"][0]["question"] += " Think carefully."
    questions.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    simulator.reset()
    with pytest.MonkeyPatch.context() as mp:
        code, run_c = run_cli(mp, simulator, sample_copy, tmp_path / "c", "--users", "0", "--limit-questions", "1")
    simulator.reset()
    assert code == 0
    capsys.readouterr()
    before = set(run_a.glob("compare-*"))
    assert main(["compare", str(run_a), str(run_c.root)]) == 1
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    a_hash = read_record(run_a / "run.json", RunFile).questions_sha256
    c_hash = read_record(run_c.run, RunFile).questions_sha256
    assert line == (f"mobilemem: compare: the runs evaluated different datasets: questions_sha256 differs: "
                    f"{a_hash} in {run_a} vs {c_hash} in {run_c.root}")
    assert captured.out == "" and "Traceback" not in captured.err
    assert set(run_a.glob("compare-*")) == before and list(run_c.root.glob("compare-*")) == []
