"""summary.json and results.jsonl: a pure function of the run directory's files, rewritten at the
end of a run, after a stop, and by `python flows/mobilemem.py summarize RUN_DIR` (which loads none
of the report's libraries: report.html is `lifecycle.report_file`'s). A failure past the scores is a
cleanup error."""

from __future__ import annotations

from pathlib import Path

from mobilemem.errors import error_record
from mobilemem.records import SummaryFile
from mobilemem.rundir import RunDir, append_error, write_bytes_atomic, write_record
from mobilemem.summary import summarize_run


def write_summary(run_dir: Path) -> SummaryFile:
    """Recompute and write summary.json and results.jsonl (also `summarize RUN_DIR`)."""
    run = RunDir(run_dir)
    summary, results = summarize_run(run_dir)
    write_bytes_atomic(run.results, "".join(r.model_dump_json() + "\n" for r in results).encode("utf-8"))
    write_record(run.summary, summary)
    return summary


def count_cleanup_error(run_dir: Path, summary: SummaryFile, exc: Exception) -> SummaryFile:
    """Record a failure that came after the scores were written, and count it in summary.json."""
    append_error(RunDir(run_dir), error_record(exc, stage="cleanup"))
    try:
        write_summary(run_dir)
    except OSError:
        pass
    return summary.model_copy(update={"cleanup_error_count": summary.cleanup_error_count + 1})
