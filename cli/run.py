"""The main command, `python flows/mobilemem.py --dataset PATH --output PATH [options]`: preflight
(a refusal is one line, exit 1), then the parent flow in this process, on Prefect's embedded server
unless PREFECT_API_URL names one, and the exit status of how it ended (cli.exit_codes)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from prefect.exceptions import TerminationSignal

from mobilemem.candidates import CANDIDATES
from mobilemem.dataset import DATASET_ID
from mobilemem.errors import ConfigError, DatasetError, describe, error_record
from mobilemem.process_guard import guard_descendants
from mobilemem.records import RunRequest, SummaryFile
from mobilemem.rundir import RunDir, append_error, read_record
from flows.mobilemem import mobilemem
from lifecycle import run_end, run_setup
from cli import console, exit_codes, signals
from cli.arguments import CommandParser, positive, user_ids
from cli.summarize import headline


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


def preflight(request: RunRequest) -> run_setup.Plan | int:
    """The run's plan, handed over to the flow, or 1 when it is refused (said in one line)."""
    try:
        plan = run_setup.preflight(request)
    except (ConfigError, DatasetError) as exc:
        print(f"mobilemem: refused to start: {exc}", file=sys.stderr)
        return exit_codes.REFUSED
    run_setup.hand_over(plan)
    return plan


def evaluate(plan: run_setup.Plan) -> int:
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


def main(argv: Sequence[str]) -> int:
    args = evaluate_parser().parse_args(argv)
    request = RunRequest(dataset=args.dataset, output=args.output, model=args.model,
                         user_concurrency=args.user_concurrency, query_concurrency=args.query_concurrency,
                         config=args.config, users=args.users, limit_questions=args.limit_questions,
                         simulate=args.simulate, reuse=args.reuse or (), candidate=args.candidate)
    plan = preflight(request)
    return plan if isinstance(plan, int) else evaluate(plan)
