"""The command line: the main command's arguments, and the other commands `summarize RUN_DIR`
(summary.json and results.jsonl again, from the files) and `rejudge EARLIER_RUN` (a new run that reuses every memory and answer of the
earlier run, judges all of them again, asks the candidate nothing, and compares the labels)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from mobilemem.candidates import CANDIDATES
from mobilemem.dataset import DATASET_ID
from mobilemem.records import JudgeSettingsFile, JudgmentFile, LabelFlip, RejudgeFile, SummaryFile
from mobilemem.rundir import RunDir, write_record
from mobilemem.run_reader import DamagedFile, NotARunDirectory, RunReader
from mobilemem.summary import liveness
from lifecycle.analysis_commands import refuse, run_dir_argument
from lifecycle.run_setup import HEARTBEAT_S
from lifecycle.summary_files import write_summary
from lifecycle.arguments import CommandParser


def user_ids(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--users takes comma-separated integer user ids, got {text!r}") from None


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def evaluate_parser() -> argparse.ArgumentParser:
    """The main command's arguments (`python flows/mobilemem.py --dataset ... --output ...`)."""
    parser = CommandParser(
        prog="python flows/mobilemem.py",
        description=f"Evaluate the ReMe Image memory on the visual_reasoning questions of {DATASET_ID}. "
                    "`python flows/mobilemem.py summarize RUN_DIR` recomputes summary.json and results.jsonl; "
                    "`report RUN_DIR` writes report.html again; `compare RUN_A RUN_B` compares two runs of one "
                    "dataset.")
    parser.add_argument("--dataset", type=Path, required=True,
                        help="folder holding data.jsonl, questions.jsonl and the extracted image/ (or omni/ with them)")
    parser.add_argument("--output", type=Path, required=True,
                        help="the run goes to OUTPUT/mobilemem/<model>/ (refused if it exists)")
    parser.add_argument("--model", help="candidate model name (default from the configuration)")
    parser.add_argument("--user-concurrency", type=positive, help="users evaluated at once (default 4)")
    parser.add_argument("--query-concurrency", type=positive,
                        help="questions in flight across all users, answer start to judgment end (default 16)")
    parser.add_argument("--config", type=Path, help="YAML file deep-merged over the defaults")
    parser.add_argument("--users", type=user_ids, help="only these user ids, comma-separated")
    parser.add_argument("--limit-questions", type=positive,
                        help="keep the first N selected questions of each user (smoke runs)")
    parser.add_argument("--simulate", action="store_true",
                        help="use the local model simulator for both roles (ignores LLM_* variables)")
    parser.add_argument("--candidate", choices=CANDIDATES,
                        help="what is evaluated (config candidate.kind): reme-image (default, ReMe through the "
                             "plugin), or a baseline on the same contract: no-memory, bm25-rag; a baseline's run "
                             "goes to OUTPUT/mobilemem/<model>-<candidate>/")
    parser.add_argument("--reuse", type=Path, action="append", metavar="RUN_DIR",
                        help="copy from this earlier run directory every complete memory, successful answer "
                             "and judgment this run would produce (same fingerprints); repeatable, first wins")
    return parser


def score_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def headline(run_dir: Path, summary: SummaryFile) -> str:
    pct = score_text
    gaps = summary.gap_count
    return (f"run directory: {run_dir}\n"
            f"scored {summary.scored}/{summary.expected} questions ({gaps} technical gaps)"
            f"{' [simulated]' if summary.simulated else ''}: accuracy {pct(summary.overall.accuracy)}, "
            f"F1 {pct(summary.overall.f1)}, BLEU-1 {pct(summary.overall.bleu1)}")


def report_damage(command: str, root: Path, damaged: Sequence[str]) -> None:
    """One line per file of the run that could not be trusted (each cost only its own item)."""
    for line in damaged:
        print(f"mobilemem: {command}: skipped {root}/{line}", file=sys.stderr)


def summarize(argv: Sequence[str]) -> int:
    run_dir = run_dir_argument(argv, "summarize", "Recompute summary.json and results.jsonl of a run directory.")
    if run_dir is None:
        return 1
    try:
        summary = write_summary(run_dir)
    except (NotARunDirectory, DamagedFile, OSError) as exc:
        return refuse("summarize", exc, run_dir)
    report_damage("summarize", run_dir, summary.damaged)
    print(headline(run_dir, summary))
    why = liveness(RunReader.open(run_dir).plan, datetime.now(UTC), 3 * HEARTBEAT_S + 30)
    if why is not None:
        print(f"mobilemem: the run in {run_dir} is not alive: {why}; its {summary.not_attempted} questions "
              "without an outcome are reported as not attempted (status not_run)", file=sys.stderr)
    return 0


def rejudge_params(argv: Sequence[str]) -> dict | int:
    """The flow's parameters of a rejudge run: the earlier run's dataset, users, question limit,
    model and simulator flag; its configuration is the base (lifecycle.run_setup.preflight)."""
    parser = CommandParser(
        prog="python flows/mobilemem.py rejudge",
        description="A new run that reuses every memory and answer of EARLIER_RUN and judges them all again.")
    parser.add_argument("earlier_run", type=Path)
    parser.add_argument("--output", type=Path, required=True, help="the new run goes to OUTPUT/mobilemem/<model>/")
    parser.add_argument("--judge-model", help="the judge model (default: the earlier run's)")
    parser.add_argument("--config", type=Path, help="YAML deep-merged over the earlier run's configuration")
    args = parser.parse_args(argv)
    try:
        earlier = RunReader.open(args.earlier_run).plan
    except (NotARunDirectory, DamagedFile) as exc:
        print(f"mobilemem: refused to start: rejudge {args.earlier_run}: {exc}", file=sys.stderr)
        return 1
    return {"dataset": Path(earlier.dataset_path), "output": args.output, "model": None, "config": args.config,
            "users": earlier.users, "limit_questions": earlier.args.get("limit_questions"),
            "simulate": earlier.simulated, "rejudge": args.earlier_run, "judge_model": args.judge_model}


def label_changes(earlier: RunReader, new: RunReader) -> RejudgeFile:
    """The new run's labels against the earlier run's, over the questions judged in both; a damaged
    judgment of either run leaves its question out (listed in `damaged`)."""
    pairs = []
    for planned in new.plan.questions:
        before = earlier.tolerant(earlier.run.user(planned.user_id).question(planned.question_id).judgment,
                                  JudgmentFile)
        after = new.tolerant(new.run.user(planned.user_id).question(planned.question_id).judgment, JudgmentFile)
        if before and after and before.label and after.label:
            pairs.append((planned.question_id, before.label, after.label))

    def accuracy(index: int) -> float | None:
        return sum(p[index] == "CORRECT" for p in pairs) / len(pairs) if pairs else None

    judge_before = earlier.tolerant(earlier.run.judge_settings, JudgeSettingsFile)
    judge_after = new.tolerant(new.run.judge_settings, JudgeSettingsFile)
    return RejudgeFile(
        earlier_run=str(earlier.root), earlier_run_id=earlier.plan.flow_run_id,
        judge_model_before=judge_before.model if judge_before else None,
        judge_model_after=judge_after.model if judge_after else None, compared=len(pairs),
        accuracy_before=accuracy(1), accuracy_after=accuracy(2),
        flips=[LabelFlip(question_id=q, before=b, after=a) for q, b, a in pairs if a != b],
        damaged=[f"earlier run: {line}" for line in earlier.damaged] + [f"this run: {line}" for line in new.damaged])


def report_rejudge(earlier_run: Path, new_run: RunDir, code: int) -> int:
    """After a rejudge run that finished (scored something or not): rejudge.json in the new run and
    one line of comparison."""
    if code not in (0, 2, 4):
        return code
    try:
        result = label_changes(RunReader.open(earlier_run), RunReader.open(new_run.root))
        write_record(new_run.rejudge, result)
    except (NotARunDirectory, DamagedFile, OSError) as exc:
        return refuse("rejudge", exc, new_run.root)
    for line in result.damaged:
        print(f"mobilemem: rejudge: left out (damaged): {line}", file=sys.stderr)

    def name(model: str | None) -> str:
        return model or "an unknown judge (no judge-settings.json)"

    print(f"rejudge: {result.compared} questions judged in both runs by {name(result.judge_model_before)} and "
          f"{name(result.judge_model_after)}: accuracy {score_text(result.accuracy_before)} -> "
          f"{score_text(result.accuracy_after)}, {len(result.flips)} labels flipped ({new_run.rejudge})")
    return code
