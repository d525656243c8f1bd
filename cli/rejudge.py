"""`rejudge EARLIER_RUN --output OUT`: a new run that reuses every memory and answer of the earlier
run, judges all of them again, asks the candidate nothing, and compares the labels (rejudge.json)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from mobilemem.metrics import score_text
from mobilemem.records import JudgeSettingsFile, JudgmentFile, LabelFlip, RejudgeFile, RunRequest
from mobilemem.rundir import RunDir, write_record
from mobilemem.run_reader import DamagedFile, NotARunDirectory, RunReader
from cli import exit_codes, run
from cli.arguments import CommandParser, refuse


def rejudge_request(argv: Sequence[str]) -> RunRequest | int:
    """The request of a rejudge run: the earlier run's dataset, users, question limit,
    model and simulator flag; its configuration is the base (lifecycle.run_plan.preflight), or the
    exit status of a refusal."""
    parser = CommandParser(
        prog="python flows/mobilemem.py rejudge",
        description="A new run that reuses every memory and answer of EARLIER_RUN and judges them all again.")
    parser.add_argument("earlier_run", type=Path)
    parser.add_argument("--output", type=Path, required=True, help="the new run goes to OUTPUT/mobilemem/<model>/")
    parser.add_argument("--judge-model", help="the judge model (default: the earlier run's)")
    parser.add_argument("--config", type=Path, help="YAML deep-merged over the earlier run's configuration")
    args = parser.parse_args(argv)
    try:
        earlier = RunReader.open(args.earlier_run).plan
    except (NotARunDirectory, DamagedFile) as exc:
        print(f"mobilemem: refused to start: rejudge {args.earlier_run}: {exc}", file=sys.stderr)
        return exit_codes.REFUSED
    return RunRequest(dataset=Path(earlier.dataset_path), output=args.output, config=args.config, users=earlier.users,
                      limit_questions=earlier.args.limit_questions, simulate=earlier.simulated,
                      rejudge=args.earlier_run, judge_model=args.judge_model)


def label_changes(earlier: RunReader, new: RunReader) -> RejudgeFile:
    """The new run's labels against the earlier run's, over the questions judged in both; a damaged
    judgment of either run leaves its question out (listed in `damaged`)."""
    pairs = []
    for planned in new.plan.questions:
        before = earlier.tolerant(earlier.run.user(planned.user_id).question(planned.question_id).judgment,
                                  JudgmentFile)
        after = new.tolerant(new.run.user(planned.user_id).question(planned.question_id).judgment, JudgmentFile)
        if before and after and before.label and after.label:
            pairs.append((planned.question_id, before.label, after.label))

    def accuracy(index: int) -> float | None:
        return sum(p[index] == "CORRECT" for p in pairs) / len(pairs) if pairs else None

    judge_before = earlier.tolerant(earlier.run.judge_settings, JudgeSettingsFile)
    judge_after = new.tolerant(new.run.judge_settings, JudgeSettingsFile)
    return RejudgeFile(
        earlier_run=str(earlier.root), earlier_run_id=earlier.plan.flow_run_id,
        judge_model_before=judge_before.model if judge_before else None,
        judge_model_after=judge_after.model if judge_after else None, compared=len(pairs),
        accuracy_before=accuracy(1), accuracy_after=accuracy(2),
        flips=[LabelFlip(question_id=q, before=b, after=a) for q, b, a in pairs if a != b],
        damaged=[f"earlier run: {line}" for line in earlier.damaged] + [f"this run: {line}" for line in new.damaged])


def report_rejudge(earlier_run: Path, new_run: RunDir, code: int) -> int:
    """After a rejudge run that finished (scored something or not): rejudge.json in the new run and
    one line of comparison."""
    if code not in exit_codes.FINISHED:
        return code
    try:
        result = label_changes(RunReader.open(earlier_run), RunReader.open(new_run.root))
        write_record(new_run.rejudge, result)
    except (NotARunDirectory, DamagedFile, OSError) as exc:
        return refuse("rejudge", exc, new_run.root)
    for line in result.damaged:
        print(f"mobilemem: rejudge: left out (damaged): {line}", file=sys.stderr)

    def name(model: str | None) -> str:
        return model or "an unknown judge (no judge-settings.json)"

    print(f"rejudge: {result.compared} questions judged in both runs by {name(result.judge_model_before)} and "
          f"{name(result.judge_model_after)}: accuracy {score_text(result.accuracy_before)} -> "
          f"{score_text(result.accuracy_after)}, {len(result.flips)} labels flipped ({new_run.rejudge})")
    return code


def main(argv: Sequence[str]) -> int:
    request = rejudge_request(argv)
    if isinstance(request, int):
        return request
    plan = run.preflight(request)
    if isinstance(plan, int):
        return plan
    return report_rejudge(request.rejudge, plan.run, run.evaluate(plan))
