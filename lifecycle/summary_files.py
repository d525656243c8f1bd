"""summary.json and results.jsonl: a pure function of the run directory's files, rewritten at the
end of a run, after a stop, and by `python flows/mobilemem.py summarize RUN_DIR`."""

from __future__ import annotations

from pathlib import Path

from mobilemem.records import SummaryFile
from mobilemem.rundir import RunDir, write_bytes_atomic, write_record
from mobilemem.summary import summarize_run


def write_summary(run_dir: Path) -> SummaryFile:
    """Recompute and write summary.json and results.jsonl (also `summarize RUN_DIR`)."""
    run = RunDir(run_dir)
    summary, results = summarize_run(run_dir)
    write_bytes_atomic(run.results, "".join(r.model_dump_json() + "\n" for r in results).encode("utf-8"))
    write_record(run.summary, summary)
    return summary
