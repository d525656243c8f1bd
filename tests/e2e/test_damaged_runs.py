"""`summarize`, `report`, `compare` and `rejudge` on copies of a real run (the CLI's fault-free run
of the sample) damaged by the test: truncated, linked out, edited, read-only (issue 22). Each damage
is one line naming the file, costs only its own item, and never changes the run it reads."""

import json
import os
import re

import pytest

from damage import SENTINEL, cli, copy_run, link_outside, no_traceback, snapshot, truncate
from e2e.runs import summary
from cli import main
from mobilemem.records import JudgmentFile, RejudgeFile, ResultLine, ReuseFile, RunFile
from mobilemem.rundir import RunDir, read_lines, read_record, write_record
from pixel_edit import pixel_variants

pytestmark = pytest.mark.slow
QUESTION = ("0", "0_q_1")


@pytest.fixture
def earlier(baseline_run, tmp_path) -> RunDir:
    code, run, _, _ = baseline_run
    assert code == 0 and summary(run).scored == 9
    return RunDir(copy_run(run.root, tmp_path / "E"))


def _question(run: RunDir):
    return run.user(int(QUESTION[0])).question(QUESTION[1])


def _stderr_lines(capsys) -> tuple[str, list[str]]:
    captured = capsys.readouterr()
    return captured.out, [line for line in captured.err.splitlines() if line.strip()]


@pytest.mark.parametrize("name", ["judgment", "metrics", "answer_response"])
def test_summarize_leaves_out_only_the_question_of_a_truncated_record(earlier, name, capsys):
    damaged = getattr(_question(earlier), name)
    truncate(damaged)
    assert main(["summarize", str(earlier.root)]) == 0
    out, err = _stderr_lines(capsys)
    relative = damaged.relative_to(earlier.root).as_posix()
    assert err == [f"mobilemem: summarize: skipped {earlier.root}/{relative}: not valid JSON (truncated or edited): "
                   + err[0].split("edited): ", 1)[1]]
    s = summary(earlier)
    assert (s.scored, s.expected, len(s.damaged)) == (8, 9, 1) and s.damaged[0].startswith(relative + ": ")
    lines = {line.question_id: line.status for line in read_lines(earlier.results, ResultLine)}
    assert lines.pop(QUESTION[1]) == "damaged" and set(lines.values()) == {"scored"}
    assert "scored 8/9 questions" in out


def test_summarize_does_not_follow_a_record_linked_out_of_the_run(earlier, tmp_path, capsys):
    """judgment.json replaced by a link to a valid judgment outside: never read, reported."""
    target = _question(earlier).judgment
    forged = read_record(target, JudgmentFile).model_copy(update={"label": "WRONG", "raw_reply": SENTINEL})
    link_outside(target, tmp_path / "outside" / "judgment.json", forged.model_dump_json().encode())
    before = snapshot(earlier.root)
    assert main(["summarize", str(earlier.root)]) == 0
    _, err = _stderr_lines(capsys)
    assert err == [f"mobilemem: summarize: skipped {target}: is a symbolic link: not followed"]
    assert summary(earlier).scored == 8
    assert SENTINEL not in earlier.results.read_text() + earlier.summary.read_text()
    after = snapshot(earlier.root)
    assert {k: v for k, v in after.items() if k not in ("summary.json", "results.jsonl")} == {
        k: v for k, v in before.items() if k not in ("summary.json", "results.jsonl")}


def test_a_truncated_session_makes_its_users_tokens_unknown_not_wrong(earlier, capsys):
    session = sorted(earlier.user(1).sessions.glob("*.json"))[0]
    truncate(session, 0.3)
    assert main(["summarize", str(earlier.root)]) == 0
    _, err = _stderr_lines(capsys)
    assert len(err) == 1 and str(session) in err[0]
    per_user = summary(earlier).usage.mean_tokens_per_user
    assert (per_user.denominator, per_user.known) == (3, 2) and summary(earlier).scored == 9
    assert per_user.value is None and per_user.tokens > 0  # the total is not known; the two known users' sum is


@pytest.mark.parametrize("command", ["summarize", "report", "compare", "rejudge"])
def test_a_truncated_run_json_is_one_line_and_exit_1(earlier, command, tmp_path, capsys):
    truncate(earlier.run)
    before = snapshot(earlier.root)
    argv = {"summarize": ["summarize", str(earlier.root)], "report": ["report", str(earlier.root)],
            "compare": ["compare", str(earlier.root), str(earlier.root)],
            "rejudge": ["rejudge", str(earlier.root), "--output", str(tmp_path / "new")]}[command]
    assert main(argv) == 1
    _, err = _stderr_lines(capsys)
    assert len(err) == 1 and f"{earlier.run}: not valid JSON (truncated or edited)" in err[0], err
    assert snapshot(earlier.root) == before and not (tmp_path / "new").exists()


def test_summarize_and_report_in_a_read_only_run_folder_say_so_in_one_line(earlier):
    before = snapshot(earlier.root)
    for command in ("summarize", "report"):
        result = cli(command, str(earlier.root), read_only=earlier.root)
        no_traceback(result)
        assert result.returncode == 1, result.stderr
        assert re.fullmatch(rf"mobilemem: {command}: cannot write into {re.escape(str(earlier.root))}: "
                            r"Read-only file system\n", result.stderr), result.stderr
    assert snapshot(earlier.root) == before


def test_report_shows_the_run_and_names_what_it_left_out(earlier, capsys):
    damaged = _question(earlier).answer_response
    truncate(damaged)
    assert main(["report", str(earlier.root)]) == 0
    _, err = _stderr_lines(capsys)
    assert len(err) == 1 and err[0].startswith(f"mobilemem: report: left out {damaged}: not valid JSON")
    page = (earlier.root / "report.html").read_text(encoding="utf-8")
    assert 'id="damaged"' in page and damaged.relative_to(earlier.root).as_posix() in page


def test_compare_leaves_out_a_scored_line_without_scores_and_writes_where_it_should(earlier, tmp_path, capsys):
    other = RunDir(copy_run(earlier.root, tmp_path / "B"))
    lines = other.results.read_text().splitlines()
    broken = json.loads(lines[0])
    broken["f1"] = None
    lines[0] = json.dumps(broken)
    other.results.write_text("\n".join(lines) + "\n")
    plan = read_record(other.run, RunFile)
    write_record(other.run, plan.model_copy(update={"flow_run_id": "a/../../x", "started_at": plan.started_at
                                                    .replace(year=plan.started_at.year + 1)}))
    before = snapshot(earlier.root)
    outside = sorted(p.name for p in tmp_path.iterdir())
    assert main(["compare", str(earlier.root), str(other.root)]) == 0
    out, err = _stderr_lines(capsys)
    assert err == [f"mobilemem: compare: left out of run B: {other.root}/results.jsonl: line 1: not a valid "
                   "ResultLine (the record: Value error, a scored line needs its label, f1 and bleu1)"]
    assert "compared 8 questions scored in both (only in A: 1, only in B: 0)" in out
    written = sorted(p.name for p in other.root.glob("compare-*"))
    assert len(written) == 2 and all(re.fullmatch(r"compare-[0-9a-f]{8}-vs-ax\.(json|html)", n) for n in written)
    assert sorted(p.name for p in tmp_path.iterdir()) == outside and snapshot(earlier.root) == before


def _rejudge(monkeypatch, simulator, earlier: RunDir, output, *extra: str) -> int:
    monkeypatch.setenv("LLM_API_KEY", "sk-rejudge-damaged")
    monkeypatch.setenv("LLM_BASE_URL", simulator.base_url)
    simulator.reset()
    return main(["rejudge", str(earlier.root), "--output", str(output), *extra])


def test_rejudge_of_a_run_with_a_truncated_judgment_and_no_judge_settings(earlier, simulator, monkeypatch,
                                                                         tmp_path, capsys):
    truncate(_question(earlier).judgment)
    earlier.judge_settings.unlink()
    before = snapshot(earlier.root)
    assert _rejudge(monkeypatch, simulator, earlier, tmp_path / "new") == 0
    out, err = _stderr_lines(capsys)
    new = RunDir.for_output(tmp_path / "new", "qwen3.8-max")
    result = read_record(new.rejudge, RejudgeFile)
    assert (result.compared, result.judge_model_before, result.judge_model_after) == (8, None, "qwen3.8-max")
    assert len(result.damaged) == 1 and result.damaged[0].startswith(
        "earlier run: users/0/questions/0_q_1/judgment.json: not valid JSON")
    assert any("rejudge: left out (damaged): earlier run: users/0/questions/0_q_1/judgment.json" in e for e in err)
    assert "rejudge: 8 questions judged in both runs by an unknown judge" in out
    assert summary(new).scored == 9 and snapshot(earlier.root) == before


def test_rejudge_with_a_config_that_changes_the_model_writes_into_the_run_it_made(earlier, simulator, monkeypatch,
                                                                                tmp_path, capsys):
    config = tmp_path / "other-model.yaml"
    config.write_text("model: another-model\n")
    assert _rejudge(monkeypatch, simulator, earlier, tmp_path / "new", "--config", str(config)) == 4  # none scored
    new = RunDir.for_output(tmp_path / "new", "another-model")
    assert read_record(new.rejudge, RejudgeFile).compared == 0  # another model: no memory is the same one
    assert "rejudge: 0 questions judged in both runs" in capsys.readouterr().out


def test_rejudge_refuses_a_dataset_whose_gold_changed(earlier, sample_copy, simulator, monkeypatch, tmp_path,
                                                      capsys):
    questions = sample_copy / "questions.jsonl"
    questions.write_text(questions.read_text().replace('"answer": ["9", "nine"', '"answer": ["8", "eight"', 1))
    plan = read_record(earlier.run, RunFile)
    write_record(earlier.run, plan.model_copy(update={"dataset_path": str(sample_copy)}))
    assert _rejudge(monkeypatch, simulator, earlier, tmp_path / "new") == 1
    _, err = _stderr_lines(capsys)
    assert len(err) == 1 and re.fullmatch(
        rf"mobilemem: refused to start: rejudge {re.escape(str(earlier.root))}: the runs evaluated different "
        rf"datasets: questions_sha256 differs: [0-9a-f]{{64}} in {re.escape(str(earlier.root))} vs [0-9a-f]{{64}} "
        rf"in {re.escape(str(sample_copy))}", err[0]), err
    assert simulator.requests == [] and not (tmp_path / "new").exists()


def test_rejudge_refuses_a_dataset_whose_image_pixels_changed(earlier, sample_root, simulator, monkeypatch,
                                                              tmp_path, capsys):
    """Same data.jsonl and questions.jsonl, one of user 0's images redrawn at the same byte size."""
    edited, _, _ = pixel_variants(sample_root, tmp_path / "datasets", "0_q_3")
    plan = read_record(earlier.run, RunFile)
    write_record(earlier.run, plan.model_copy(update={"dataset_path": str(edited)}))
    assert _rejudge(monkeypatch, simulator, earlier, tmp_path / "new") == 1
    _, err = _stderr_lines(capsys)
    assert len(err) == 1 and err[0].startswith(
        f"mobilemem: refused to start: rejudge {earlier.root}: the runs evaluated different datasets: the images "
        "of user 0 differ: images_sha256 "), err
    assert simulator.requests == [] and not (tmp_path / "new").exists()


def test_reuse_of_a_run_mounted_read_only_reuses_it(earlier, sample_root, simulator, tmp_path):
    """`--reuse E` where E cannot be written at all (a read-only mount): nothing of the new run needs
    to write into E, and E's memory and answers are reused."""
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"), "LLM_API_KEY": "sk-read-only-reuse",
           "LLM_BASE_URL": simulator.base_url}
    env.pop("PREFECT_API_URL", None)
    before = snapshot(earlier.root)
    simulator.reset()
    result = cli("--dataset", str(sample_root), "--output", str(tmp_path / "new"), "--users", "0",
                 "--reuse", str(earlier.root), env=env, read_only=earlier.root)
    no_traceback(result)
    assert result.returncode == 0, result.stderr[-2000:]
    new = RunDir.for_output(tmp_path / "new", "qwen3.8-max")
    reused = read_record(new.user(0).reuse, ReuseFile)
    assert reused.memory is not None and len(reused.answers) == len(reused.judgments) == 3
    assert summary(new).scored == 3 and [r for r in simulator.requests if r.role != "judge"] == []
    usage = summary(new).usage  # reused whole: it cost this run nothing, over its 1 user and 3 questions
    assert (usage.mean_tokens_per_user.value, usage.mean_tokens_per_user.denominator) == (0.0, 1)
    assert (usage.mean_tokens_per_question.value, usage.mean_tokens_per_question.denominator) == (0.0, 3)
    assert snapshot(earlier.root) == before
