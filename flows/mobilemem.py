"""Command line of mobilemem-bench.

    python flows/mobilemem.py --dataset PATH --output PATH [options]
    python -m flows.mobilemem --dataset PATH --output PATH [options]

Until the Prefect flow lands, a run loads the configuration, runs the full preflight of the
dataset and prints what would be evaluated; it sends no model request and writes nothing.
Exit codes: 0 ok, 1 refused to start (bad configuration or dataset).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

if __name__ == "__main__" and not __package__:
    # `python flows/mobilemem.py` puts flows/ first on sys.path, where this file would shadow the
    # `mobilemem` package. Run the installed module `flows.mobilemem` instead.
    sys.path[0] = str(Path(__file__).resolve().parents[1])
    from flows.mobilemem import main

    raise SystemExit(main())

from mobilemem.config import Config, load_config
from mobilemem.dataset import DATASET_ID, DATASET_REVISION, Dataset, load_dataset
from mobilemem.errors import ConfigError, DatasetError
from mobilemem.rundir import RunDir


def _user_ids(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--users takes comma-separated integer user ids, got {text!r}") from None


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python flows/mobilemem.py",
        description=f"Evaluate the ReMe Image memory on the visual_reasoning questions of {DATASET_ID}.",
    )
    parser.add_argument("--dataset", type=Path, required=True,
                        help="folder holding data.jsonl, questions.jsonl and the extracted image/ (or omni/ with them)")
    parser.add_argument("--output", type=Path, required=True,
                        help="the run goes to OUTPUT/mobilemem/<model>/ (refused if it exists)")
    parser.add_argument("--model", help="candidate model name (default from the configuration)")
    parser.add_argument("--user-concurrency", type=_positive, help="users evaluated at once (default 4)")
    parser.add_argument("--query-concurrency", type=_positive,
                        help="answer agents in flight across all users (default 16)")
    parser.add_argument("--config", type=Path, help="YAML file deep-merged over the defaults")
    parser.add_argument("--users", type=_user_ids, help="only these user ids, comma-separated")
    parser.add_argument("--limit-questions", type=_positive,
                        help="keep the first N selected questions of each user (smoke runs)")
    parser.add_argument("--simulate", action="store_true",
                        help="use the local model simulator for both roles (ignores LLM_* variables)")
    return parser


def describe_plan(dataset: Dataset, config: Config, run_dir: RunDir) -> str:
    sessions = sum(len(u.sessions) for u in dataset.users)
    images = sum(1 for u in dataset.users for s in u.sessions for t in s.turns if t.image)
    questions = sum(len(u.questions) for u in dataset.users)
    lines = [
        f"dataset   {dataset.root} (declared revision {DATASET_REVISION[:12]})",
        f"model     {config.model} (judge {config.judge.model})",
        f"run dir   {run_dir.root}{'  [exists: a run would be refused]' if run_dir.root.exists() else ''}",
        f"scheduled {len(dataset.users)} of {dataset.users_in_file} users, {sessions} sessions, "
        f"{images} images, {questions} visual_reasoning questions",
    ]
    for user in dataset.users:
        user_images = sum(1 for s in user.sessions for t in s.turns if t.image)
        lines.append(f"  user {user.user_id:>4} ({user.language}): {len(user.sessions)} sessions, "
                     f"{user_images} images, {len(user.questions)} questions")
    lines.append("preflight passed; the evaluation flow is not built yet, so nothing was sent or written.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    overrides = {"model": args.model, "user_concurrency": args.user_concurrency,
                 "query_concurrency": args.query_concurrency}
    try:
        config = load_config(args.config, overrides)
        dataset = load_dataset(args.dataset, users=args.users, limit_questions=args.limit_questions)
    except (ConfigError, DatasetError) as exc:
        print(f"mobilemem: refused to start: {exc}", file=sys.stderr)
        return 1
    print(describe_plan(dataset, config, RunDir.for_output(args.output, config.model)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
