"""Prefect task `finalize`: summary.json and results.jsonl from the run directory, report.html from
them, and the artifacts that point at them."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from prefect import task
from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact
from prefect.cache_policies import NO_CACHE

from mobilemem.metrics import score_text
from mobilemem.records import RunFile, SummaryFile
from mobilemem.rundir import RunDir, read_record
from mobilemem.summary import summarize_run
from lifecycle.dashboard import RunIdentity
from lifecycle.report_file import write_report_counted
from lifecycle.summary_files import count_cleanup_error, write_summary

log = logging.getLogger(__name__)
ARTIFACTS_TIMEOUT_S = 15.0  # a busy or lost API delays the end of the run by this much at most


@task(name="finalize", retries=0, task_run_name="finalize", cache_policy=NO_CACHE, persist_result=False)
async def finalize(run_dir: Path) -> SummaryFile:
    try:
        summary = write_summary(run_dir)
    except OSError as exc:  # a full disk: the scores are still reported; `summarize RUN_DIR` writes them later
        log.error("could not write summary.json / results.jsonl: %s", exc.strerror or exc)
        summary, reported = summarize_run(run_dir)[0], False
    else:
        summary, reported = write_report_counted(run_dir, summary)
    try:
        await asyncio.wait_for(_artifacts(run_dir, summary), ARTIFACTS_TIMEOUT_S)
    except Exception as exc:  # the dashboard's view is bookkeeping: a lost API is a cleanup error, no more
        log.warning("the run's artifacts were not created: %s", type(exc).__name__)
        summary = count_cleanup_error(run_dir, summary, exc)
        if reported:  # report.html shows summary.json as it is now
            write_report_counted(run_dir, summary)
    return summary


async def _artifacts(run_dir: Path, summary: SummaryFile) -> None:
    rows = [{"group": "overall", "expected": summary.overall.expected, "scored": summary.overall.scored,
             "accuracy": score_text(summary.overall.accuracy), "f1": score_text(summary.overall.f1),
             "bleu1": score_text(summary.overall.bleu1)}]
    rows += [{"group": f"{kind}={name}", "expected": s.expected, "scored": s.scored, "accuracy": score_text(s.accuracy),
              "f1": score_text(s.f1), "bleu1": score_text(s.bleu1)}
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
