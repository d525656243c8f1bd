"""The commands that read finished run directories and write pages for people: `report RUN_DIR`
(report.html again, from the run's files) and `compare RUN_A RUN_B` (lifecycle/compare_command.py).
They import neither Prefect nor ReMe, so
`python flows/mobilemem.py report ...` starts them before loading the flows."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from mobilemem_judge.analysis.report import write_report
from mobilemem_judge.analysis.report_data import ReportError
from lifecycle import compare_command
from lifecycle.arguments import CommandParser

COMMANDS = ("report", "compare")


def run_dir_argument(argv: Sequence[str], command: str, description: str) -> Path | None:
    """The RUN_DIR of `python flows/mobilemem.py COMMAND RUN_DIR`, or None (said in one line) when
    it holds no run.json."""
    parser = CommandParser(prog=f"python flows/mobilemem.py {command}", description=description)
    parser.add_argument("run_dir", type=Path)
    run_dir = parser.parse_args(argv).run_dir
    if not (run_dir / "run.json").is_file():
        print(f"mobilemem: {run_dir} is not a run directory (no run.json)", file=sys.stderr)
        return None
    return run_dir


def refuse(command: str, exc: Exception, target: Path) -> int:
    """Say in one line why COMMAND stopped (a damaged input names its file; a failed write names the
    folder it could not write into) and return its exit status, 1."""
    why = f"cannot write into {target}: {exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)
    print(f"mobilemem: {command}: {why}", file=sys.stderr)
    return 1


def report(argv: Sequence[str]) -> int:
    run_dir = run_dir_argument(argv, "report", "Write RUN_DIR/report.html from the run directory's files.")
    if run_dir is None:
        return 1
    try:
        path, damaged = write_report(run_dir)
    except (ReportError, OSError) as exc:
        return refuse("report", exc, run_dir)
    for line in damaged:
        print(f"mobilemem: report: left out {run_dir}/{line}", file=sys.stderr)
    print(f"report: {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


def main(argv: Sequence[str]) -> int:
    """`argv[0]` is one of COMMANDS."""
    return {"report": report, "compare": compare_command.main}[argv[0]](argv[1:])
