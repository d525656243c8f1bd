"""Prefect task `finalize`: summary.json and results.jsonl from the run directory, report.html from
them, and the artifacts that point at them."""

from __future__ import annotations

import logging
from pathlib import Path

from prefect import task
from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact
from prefect.cache_policies import NO_CACHE

from mobilemem.errors import error_record
from mobilemem.records import RunFile, SummaryFile
from mobilemem.rundir import RunDir, append_error, read_record
from mobilemem.summary import summarize_run
from mobilemem_judge.analysis.report import write_report
from lifecycle.dashboard import RunIdentity
from lifecycle.summary_files import write_summary

log = logging.getLogger(__name__)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


@task(name="finalize", retries=0, task_run_name="finalize", cache_policy=NO_CACHE, persist_result=False)
async def finalize(run_dir: Path) -> SummaryFile:
    try:
        summary = write_summary(run_dir)
    except OSError as exc:  # a full disk: the scores are still reported; `summarize RUN_DIR` writes them later
        log.error("could not write summary.json / results.jsonl: %s", exc.strerror or exc)
        summary, reported = summarize_run(run_dir)[0], False
    else:
        summary, reported = _report(run_dir, summary)
    try:
        await _artifacts(run_dir, summary)
    except Exception as exc:  # the dashboard's view is bookkeeping: a lost API is a cleanup error, no more
        log.warning("the run's artifacts were not created: %s", type(exc).__name__)
        summary = _cleanup_error(run_dir, summary, exc)
        if reported:  # report.html shows summary.json as it is now
            _report(run_dir, summary)
    return summary


def _report(run_dir: Path, summary: SummaryFile) -> tuple[SummaryFile, bool]:
    """report.html from summary.json and the run's files (`report RUN_DIR` writes it again)."""
    try:
        write_report(run_dir)
    except Exception as exc:  # the scores are on disk: a missing report is a cleanup error
        log.warning("report.html was not written: %s: %s", type(exc).__name__, exc)
        return _cleanup_error(run_dir, summary, exc), False
    return summary, True


def _cleanup_error(run_dir: Path, summary: SummaryFile, exc: Exception) -> SummaryFile:
    append_error(RunDir(run_dir), error_record(exc, stage="cleanup"))
    try:
        write_summary(run_dir)
    except OSError:
        pass
    return summary.model_copy(update={"cleanup_error_count": summary.cleanup_error_count + 1})


async def _artifacts(run_dir: Path, summary: SummaryFile) -> None:
    rows = [{"group": "overall", "expected": summary.overall.expected, "scored": summary.overall.scored,
             "accuracy": _fmt(summary.overall.accuracy), "f1": _fmt(summary.overall.f1),
             "bleu1": _fmt(summary.overall.bleu1)}]
    rows += [{"group": f"{kind}={name}", "expected": s.expected, "scored": s.scored, "accuracy": _fmt(s.accuracy),
              "f1": _fmt(s.f1), "bleu1": _fmt(s.bleu1)}
             for kind, groups in (("language", summary.by_language), ("difficulty", summary.by_difficulty))
             for name, s in groups.items()]
    manifest = read_record(RunDir(run_dir).run, RunFile)
    identity = RunIdentity.of(manifest)
    await acreate_table_artifact(table=rows, key=identity.key("scores"), description=identity.describe("scores"))
    entries = sorted(Path(run_dir).iterdir())
    files = "\n".join(f"- [`{p.name}{'/' if p.is_dir() else ''}`]({p.resolve().as_uri()})" for p in entries)
    await acreate_markdown_artifact(
        markdown=f"# mobilemem run {identity.run_id}\n\nModel `{identity.model}`, run directory `{run_dir}`:\n\n"
                 f"{files}\n\nScored {summary.scored}/{summary.expected}; gaps: {summary.gaps or 'none'}\n",
        key=identity.key("run"), description=identity.describe("the run directory's files"))
