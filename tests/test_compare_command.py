"""`compare RUN_A RUN_B [--out DIR]` through `cli.main`, on hand-made run directories."""

from datetime import UTC, datetime

from cli import main
from judge.run_files import all_correct, make_run
from mobilemem.records import CompareFile
from mobilemem.rundir import read_record

EARLY, LATE = datetime(2026, 12, 1, 9, tzinfo=UTC), datetime(2026, 12, 2, 9, tzinfo=UTC)
WRONG = {"correct": False, "f1": 0.0, "bleu1": 0.0}


def _files(folder) -> list[str]:
    return sorted(p.name for p in folder.glob("compare-*"))


def test_files_go_to_the_newer_run_and_the_summary_is_printed(tmp_path, capsys):
    old = make_run(tmp_path / "old", all_correct(), run_id="0123abcd-old", started_at=EARLY)
    new = make_run(tmp_path / "new", all_correct(**{"1_q_3": WRONG}), run_id="4567ef01-new", started_at=LATE,
                   model="model-b")
    assert main(["compare", str(new), str(old)]) == 0  # A is the newer run here: the order does not decide
    assert _files(old) == []
    assert _files(new) == ["compare-4567ef01-vs-0123abcd.html", "compare-4567ef01-vs-0123abcd.json"]
    written = read_record(new / "compare-4567ef01-vs-0123abcd.json", CompareFile)
    assert (written.run_a.run_id, written.run_a.model, written.run_b.model) == ("4567ef01-new", "model-b", "model-a")
    assert [f.question_id for f in written.correct_only_in_b] == ["1_q_3"]
    out = capsys.readouterr().out
    assert "compared 6 questions scored in both" in out
    assert "accuracy 0.8333 -> 1.0000 (+0.1667 [" in out and "McNemar exact p = 1.0000" in out
    assert "flipped: 0 correct in A only, 1 correct in B only" in out
    assert str(new / "compare-4567ef01-vs-0123abcd.html") in out


def test_one_run_against_two_others_keeps_both_and_out_is_respected(tmp_path):
    base = make_run(tmp_path / "base", all_correct(), run_id="aaaaaaaa-base", started_at=LATE)
    first = make_run(tmp_path / "first", all_correct(), run_id="11111111-x", started_at=EARLY)
    second = make_run(tmp_path / "second", all_correct(), run_id="22222222-y", started_at=EARLY)
    assert main(["compare", str(first), str(base)]) == 0
    assert main(["compare", str(second), str(base)]) == 0
    assert _files(base) == ["compare-11111111-vs-aaaaaaaa.html", "compare-11111111-vs-aaaaaaaa.json",
                            "compare-22222222-vs-aaaaaaaa.html", "compare-22222222-vs-aaaaaaaa.json"]
    out = tmp_path / "reports"
    assert main(["compare", str(first), str(second), "--out", str(out)]) == 0
    assert _files(out) == ["compare-11111111-vs-22222222.html", "compare-11111111-vs-22222222.json"]
    assert _files(first) == _files(second) == []


def test_refusals_exit_1_with_one_line_and_write_nothing(tmp_path, capsys):
    a = make_run(tmp_path / "a", all_correct(), started_at=LATE)
    other = make_run(tmp_path / "other", all_correct(), questions_sha256="f" * 64)
    for argv in (["compare", str(a), str(other)], ["compare", str(a), str(tmp_path / "missing")]):
        assert main(argv) == 1
        captured = capsys.readouterr()
        assert captured.out == ""
        [line] = captured.err.splitlines()
        assert line.startswith("mobilemem: compare: ")
    assert _files(a) == _files(other) == []
