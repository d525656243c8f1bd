"""The main command, `python flows/mobilemem.py --dataset PATH --output PATH [options]`: preflight
(a refusal is one line, exit 1), then the parent flow in this process (`cli.run_flow`, the first
module on this path that loads Prefect and ReMe), and the exit status of how it ended (cli.exit_codes)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mobilemem.candidates import installed
from mobilemem.dataset import DATASET_ID
from mobilemem.errors import ConfigError, DatasetError
from mobilemem.records import RunRequest
from lifecycle import run_plan
from cli import COMMANDS, exit_codes
from cli.arguments import CommandParser, endpoint_key, positive, user_ids


def _commands_text() -> str:
    """The description `--help` opens with: what a run does, then every command in one line each."""
    width = max(map(len, COMMANDS))
    return "\n".join([f"Evaluate a memory (by default ReMe Image) on the visual_reasoning questions of {DATASET_ID}.",
                      "", "commands:", *(f"  {name:<{width}}  {line}" for name, line in COMMANDS.items()), "",
                      "The options below are run's."])


def evaluate_parser() -> argparse.ArgumentParser:
    """The main command's arguments (`python flows/mobilemem.py --dataset ... --output ...`)."""
    parser = CommandParser(
        prog="python flows/mobilemem.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="%(prog)s [run] --dataset PATH --output PATH [options]\n       %(prog)s COMMAND ... (below)",
        description=_commands_text(), epilog="Each command's own options: python flows/mobilemem.py COMMAND -h.")
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
    parser.add_argument("--candidate", metavar="NAME",
                        help="what is evaluated (config candidate.kind): reme-image (default, ReMe through the "
                             "plugin), a baseline on the same contract (no-memory, bm25-rag) or any installed "
                             f"plug-in (installed: {', '.join(installed())}); another candidate's run goes to "
                             "OUTPUT/mobilemem/<model>-<candidate>/")
    parser.add_argument("--reuse", type=Path, action="append", metavar="RUN_DIR",
                        help="copy from this earlier run directory every complete memory, successful answer "
                             "and judgment this run would produce (same fingerprints); repeatable, first wins")
    parser.add_argument("--workers", metavar="POOL",
                        help="run each user as a run of the deployment mobilemem-user/evaluate-user on this work "
                             "pool (an external Prefect server on PostgreSQL; deployments/README.md)")
    parser.add_argument("--endpoint-limit", type=positive, metavar="N",
                        help="model requests in flight at each model endpoint, across every evaluation that "
                             "shares the Prefect server and the limit (an external Prefect server)")
    parser.add_argument("--endpoint-key", type=endpoint_key, metavar="K",
                        help="the endpoint limit's name (default: derived from each role's base URL)")
    return parser


def preflight(request: RunRequest) -> run_plan.Plan | int:
    """The run's plan, handed over to the flow, or 1 when it is refused (said in one line)."""
    try:
        plan = run_plan.preflight(request)
    except (ConfigError, DatasetError) as exc:
        print(f"mobilemem: refused to start: {exc}", file=sys.stderr)
        return exit_codes.REFUSED
    run_plan.hand_over(plan)
    return plan


def evaluate(plan: run_plan.Plan) -> int:
    """The preflighted run, to its end (`cli.run_flow`); its exit status."""
    from cli import run_flow  # here, not above: Prefect, ReMe and the model client load only once a run starts

    return run_flow.evaluate(plan)


def main(argv: Sequence[str]) -> int:
    args = evaluate_parser().parse_args(argv)
    request = RunRequest(dataset=args.dataset, output=args.output, model=args.model,
                         user_concurrency=args.user_concurrency, query_concurrency=args.query_concurrency,
                         config=args.config, users=args.users, limit_questions=args.limit_questions,
                         simulate=args.simulate, reuse=args.reuse or (), candidate=args.candidate,
                         workers=args.workers, endpoint_limit=args.endpoint_limit, endpoint_key=args.endpoint_key)
    plan = preflight(request)
    return plan if isinstance(plan, int) else evaluate(plan)
