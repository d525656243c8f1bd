"""report.html at the end of a run, from summary.json and the run's files (`report RUN_DIR` writes it
again). Its libraries (Plotly, SciPy, pandas) load with this module, so `summarize` never pays for them."""

from __future__ import annotations

import logging
from pathlib import Path

from mobilemem.records import SummaryFile
from mobilemem_judge.analysis.report import write_report
from lifecycle.summary_files import count_cleanup_error

log = logging.getLogger(__name__)


def write_report_counted(run_dir: Path, summary: SummaryFile) -> tuple[SummaryFile, bool]:
    """report.html from summary.json and the run's files, and whether it was written; a failure is a
    cleanup error (the scores are on disk; `report RUN_DIR` writes it again)."""
    try:
        write_report(run_dir)
    except Exception as exc:
        log.warning("report.html was not written: %s: %s", type(exc).__name__, exc)
        return count_cleanup_error(run_dir, summary, exc), False
    return summary, True
