"""`report RUN_DIR`: report.html again, from the run's files. It imports neither Prefect nor ReMe."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from mobilemem_judge.analysis.report import write_report
from mobilemem_judge.analysis.report_data import ReportError
from cli.arguments import refuse, run_dir_argument


def main(argv: Sequence[str]) -> int:
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
