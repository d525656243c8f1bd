"""`summarize RUN_DIR`: summary.json and results.jsonl again, from the run's files; and the headline
every command that ends a run prints."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from mobilemem.metrics import score_text
from mobilemem.records import SummaryFile
from mobilemem.run_reader import DamagedFile, NotARunDirectory, RunReader
from mobilemem.summary import liveness
from lifecycle.heartbeat import STALE_AFTER_S
from lifecycle.summary_files import write_summary
from cli.arguments import refuse, run_dir_argument


def headline(run_dir: Path, summary: SummaryFile) -> str:
    gaps = summary.gap_count
    return (f"run directory: {run_dir}\n"
            f"scored {summary.scored}/{summary.expected} questions ({gaps} technical gaps)"
            f"{' [simulated]' if summary.simulated else ''}: accuracy {score_text(summary.overall.accuracy)}, "
            f"F1 {score_text(summary.overall.f1)}, BLEU-1 {score_text(summary.overall.bleu1)}")


def report_damage(command: str, root: Path, damaged: Sequence[str]) -> None:
    """One line per file of the run that could not be trusted (each cost only its own item)."""
    for line in damaged:
        print(f"mobilemem: {command}: skipped {root}/{line}", file=sys.stderr)


def main(argv: Sequence[str]) -> int:
    run_dir = run_dir_argument(argv, "summarize", "Recompute summary.json and results.jsonl of a run directory.")
    if run_dir is None:
        return 1
    try:
        summary = write_summary(run_dir)
    except (NotARunDirectory, DamagedFile, OSError) as exc:
        return refuse("summarize", exc, run_dir)
    report_damage("summarize", run_dir, summary.damaged)
    print(headline(run_dir, summary))
    why = liveness(RunReader.open(run_dir).plan, datetime.now(UTC), STALE_AFTER_S)
    if why is not None:
        print(f"mobilemem: the run in {run_dir} is not alive: {why}; its {summary.not_attempted} questions "
              "without an outcome are reported as not attempted (status not_run)", file=sys.stderr)
    return 0
