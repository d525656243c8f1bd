"""The command line's other commands: `summarize RUN_DIR` (summary.json and results.jsonl again,
from the files) and `rejudge EARLIER_RUN` (a new run that reuses every memory and answer of the
earlier run, judges all of them again, asks the candidate nothing, and compares the labels)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from mobilemem.records import JudgeSettingsFile, JudgmentFile, LabelFlip, RejudgeFile, RunFile, SummaryFile
from mobilemem.rundir import RunDir, read_record, write_record
from mobilemem.summary import liveness
from lifecycle.analysis_commands import run_dir_argument
from lifecycle.run_setup import HEARTBEAT_S
from lifecycle.summary_files import write_summary


def user_ids(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--users takes comma-separated integer user ids, got {text!r}") from None


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def headline(run_dir: Path, summary: SummaryFile) -> str:
    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.4f}"

    gaps = sum(n for reasons in summary.gaps.values() for n in reasons.values())
    return (f"run directory: {run_dir}\n"
            f"scored {summary.scored}/{summary.expected} questions ({gaps} technical gaps)"
            f"{' [simulated]' if summary.simulated else ''}: accuracy {pct(summary.overall.accuracy)}, "
            f"F1 {pct(summary.overall.f1)}, BLEU-1 {pct(summary.overall.bleu1)}")


def summarize(argv: Sequence[str]) -> int:
    run_dir = run_dir_argument(argv, "summarize", "Recompute summary.json and results.jsonl of a run directory.")
    if run_dir is None:
        return 1
    summary = write_summary(run_dir)
    print(headline(run_dir, summary))
    why = liveness(read_record(RunDir(run_dir).run, RunFile), datetime.now(UTC), 3 * HEARTBEAT_S + 30)
    if why is not None:
        print(f"mobilemem: the run in {run_dir} is not alive: {why}; its {summary.not_attempted} questions "
              "without an outcome are reported as not attempted (status not_run)", file=sys.stderr)
    return 0


def rejudge_params(argv: Sequence[str]) -> dict | int:
    """The flow's parameters of a rejudge run: the earlier run's dataset, users, question limit,
    model and simulator flag; its configuration is the base (lifecycle.run_setup.preflight)."""
    parser = argparse.ArgumentParser(
        prog="python flows/mobilemem.py rejudge",
        description="A new run that reuses every memory and answer of EARLIER_RUN and judges them all again.")
    parser.add_argument("earlier_run", type=Path)
    parser.add_argument("--output", type=Path, required=True, help="the new run goes to OUTPUT/mobilemem/<model>/")
    parser.add_argument("--judge-model", help="the judge model (default: the earlier run's)")
    parser.add_argument("--config", type=Path, help="YAML deep-merged over the earlier run's configuration")
    args = parser.parse_args(argv)
    if not (args.earlier_run / "run.json").is_file():
        print(f"mobilemem: refused to start: rejudge {args.earlier_run}: not a run directory (no run.json)",
              file=sys.stderr)
        return 1
    earlier = read_record(RunDir(args.earlier_run).run, RunFile)
    return {"dataset": Path(earlier.dataset_path), "output": args.output, "model": None, "config": args.config,
            "users": earlier.users, "limit_questions": earlier.args.get("limit_questions"),
            "simulate": earlier.simulated, "rejudge": args.earlier_run, "judge_model": args.judge_model}


def label_changes(earlier: RunDir, new: RunDir) -> RejudgeFile:
    """The new run's labels against the earlier run's, over the questions judged in both."""
    plan = read_record(new.run, RunFile)
    pairs = []
    for planned in plan.questions:
        before = earlier.user(planned.user_id).question(planned.question_id).judgment
        after = new.user(planned.user_id).question(planned.question_id).judgment
        if before.is_file() and after.is_file():
            old, fresh = read_record(before, JudgmentFile), read_record(after, JudgmentFile)
            if old.label and fresh.label:
                pairs.append((planned.question_id, old.label, fresh.label))

    def accuracy(index: int) -> float | None:
        return sum(p[index] == "CORRECT" for p in pairs) / len(pairs) if pairs else None

    return RejudgeFile(
        earlier_run=str(earlier.root), earlier_run_id=read_record(earlier.run, RunFile).flow_run_id,
        judge_model_before=read_record(earlier.judge_settings, JudgeSettingsFile).model,
        judge_model_after=read_record(new.judge_settings, JudgeSettingsFile).model, compared=len(pairs),
        accuracy_before=accuracy(1), accuracy_after=accuracy(2),
        flips=[LabelFlip(question_id=q, before=b, after=a) for q, b, a in pairs if a != b])


def report_rejudge(params: dict, code: int) -> int:
    """After a rejudge run that finished: rejudge.json in the new run and one line of comparison."""
    if code not in (0, 2):
        return code
    earlier = RunDir(Path(params["rejudge"]))
    new = RunDir.for_output(params["output"], read_record(earlier.run, RunFile).config["model"])
    result = label_changes(earlier, new)
    write_record(new.rejudge, result)

    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.4f}"

    print(f"rejudge: {result.compared} questions judged in both runs by {result.judge_model_before} and "
          f"{result.judge_model_after}: accuracy {pct(result.accuracy_before)} -> {pct(result.accuracy_after)}, "
          f"{len(result.flips)} labels flipped ({new.rejudge})")
    return code
