"""A preflighted run's parent flow in this process, on Prefect's embedded server unless
PREFECT_API_URL names one, and the exit status of how it ended (cli.exit_codes). Importing this
module loads Prefect, ReMe and the model client: `cli.run.evaluate` imports it only once
preflight has passed (a refused run, and every other command, never load them)."""

from __future__ import annotations

import asyncio
import sys

from prefect.exceptions import TerminationSignal

from mobilemem.errors import describe, error_record
from mobilemem.process_guard import guard_descendants
from mobilemem.records import RunRequest, SummaryFile
from mobilemem.rundir import RunDir, append_error, read_record
from flows.mobilemem import mobilemem
from lifecycle import run_end, run_plan
from cli import console, exit_codes, signals
from cli.summarize import headline


def evaluate(plan: run_plan.Plan) -> int:
    console.configure()
    # The first SIGINT/SIGTERM cancels the flow (every step on the way out), then the run is closed
    # as interrupted; whatever exception it surfaced as, the exit status is 130 (cli.signals).
    guard = guard_descendants()  # Prefect's embedded server must not outlive us, even after kill -9
    summary: SummaryFile | None = None
    with console.prefect_settings(), signals.catch_signals():
        try:
            console.start_embedded_server(plan.run.prefect_server_log)
            summary = asyncio.run(signals.stopped_by_signals(_summary(plan.request)))
        except (KeyboardInterrupt, asyncio.CancelledError, TerminationSignal):
            pass
        except console.ServerNotStarted as exc:
            plan.run.abandon()
            print(f"mobilemem: the run could not start: {exc}", file=sys.stderr)
            return exit_codes.REFUSED
        except Exception as exc:  # the orchestration itself failed (e.g. the Prefect API went away)
            if not signals.interrupted():
                return _after_failure(plan.run, exc)
        finally:
            guard.stop()
        if signals.interrupted() or summary is None:
            run_end.mark_interrupted(plan.run)
            print(f"mobilemem: interrupted; completed results are in {plan.run.root}", file=sys.stderr)
            return exit_codes.INTERRUPTED
    print(headline(plan.run.root, summary))
    if plan.run.report.is_file():
        print(f"report: {plan.run.report}")
    if summary.state == "interrupted_by_error":
        print(f"mobilemem: stopped early: the disk is full; every result written so far is kept in "
              f"{plan.run.root} (exit 3)", file=sys.stderr)
        return exit_codes.STOPPED_BY_ERROR
    if summary.scored == 0 and summary.expected > 0:
        print(f"mobilemem: no question was scored; errors.jsonl in {plan.run.root} says why (exit 4)",
              file=sys.stderr)
        return exit_codes.NOTHING_SCORED
    return exit_codes.CLEANUP_ERRORS if summary.cleanup_error_count else exit_codes.COMPLETED


def _after_failure(run: RunDir, exc: Exception) -> int:
    """One line, no traceback, nothing lost: a run whose work was done ends with a cleanup error
    (exit 2); one stopped midway is `interrupted_by_error` (exit 3)."""
    if not run.is_run():
        run.abandon()
        print(f"mobilemem: the run could not start: {describe(exc)}", file=sys.stderr)
        return exit_codes.REFUSED
    append_error(run, error_record(exc, stage="cleanup"))
    state = run_end.mark_stopped(run)
    if state == "completed":
        print(headline(run.root, read_record(run.summary, SummaryFile)))
        print(f"mobilemem: the work is done but its bookkeeping failed: {describe(exc)} (exit 2)", file=sys.stderr)
        return exit_codes.CLEANUP_ERRORS
    print(f"mobilemem: the run stopped: {describe(exc)}; completed results are in {run.root} (exit 3)",
          file=sys.stderr)
    return exit_codes.STOPPED_BY_ERROR


async def _summary(request: RunRequest) -> SummaryFile:
    """Run the parent flow; its summary, whichever state (Completed or Failed) the flow run ended in."""
    state = await mobilemem(**request.model_dump(), return_state=True)
    result = await state.aresult(raise_on_failure=False)
    if isinstance(result, BaseException):
        raise result
    assert isinstance(result, SummaryFile), result
    return result
