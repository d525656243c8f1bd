"""`compare RUN_A RUN_B`: run B against run A on the questions both scored, as a `CompareFile`.

A pure function of the two run directories (run.json, results.jsonl, job.json): accuracy with the
exact McNemar test, accuracy, F1 and BLEU-1 differences (B - A) with paired bootstrap intervals,
overall and by language and difficulty, and the questions whose label flipped either way. Runs of
different datasets (their sha256 in run.json differ) are refused.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

from pydantic import ValidationError

from mobilemem.errors import MobilememError
from mobilemem.records import (CompareFile, ComparedRun, JobFile, McNemarCounts, PairedGroup, PairedScore,
                               QuestionFlip, ResultLine, RunFile)
from mobilemem.rundir import RunDir, read_lines, read_record
from mobilemem_judge.analysis import stats

DATASET_HASHES = ("data_sha256", "questions_sha256")


class CompareRefused(MobilememError):
    """A run directory is missing or unreadable, or the two runs evaluated different datasets."""


@dataclass(frozen=True)
class _Run:
    dir: RunDir
    plan: RunFile
    scored: dict[tuple[int, str], ResultLine]


def _read(path: Path, model, missing: str, reader=read_record):
    if not path.is_file():  # read_lines would read a missing results.jsonl as empty
        raise CompareRefused(f"{path.parent} {missing}")
    try:
        return reader(path, model)
    except OSError as exc:
        raise CompareRefused(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "file"
        raise CompareRefused(f"{path} is not valid: {where}: {first['msg']}") from None


def _load(root: Path) -> _Run:
    if not root.is_dir():
        raise CompareRefused(f"{root} is not a run directory")
    run = RunDir(root)
    plan = _read(run.run, RunFile, "is not a run directory (no run.json)")
    lines = _read(run.results, ResultLine, "has no results.jsonl (`python flows/mobilemem.py summarize RUN_DIR` "
                  "writes it)", read_lines)
    return _Run(run, plan, {(line.user_id, line.question_id): line for line in lines if line.status == "scored"})


def _refuse_other_datasets(a: _Run, b: _Run) -> None:
    differ = [f"{name} differs: {getattr(a.plan, name)} in {a.dir.root} vs {getattr(b.plan, name)} in {b.dir.root}"
              for name in DATASET_HASHES if getattr(a.plan, name) != getattr(b.plan, name)]
    if differ:
        raise CompareRefused("the runs evaluated different datasets: " + "; ".join(differ))


def _score(a: list[float], b: list[float]) -> PairedScore:
    difference = stats.paired_difference(a, b)
    return PairedScore(a=fmean(a) if a else None, b=fmean(b) if b else None,
                       difference=difference.estimate, low=difference.low, high=difference.high)


def _group(pairs: list[tuple[ResultLine, ResultLine]]) -> PairedGroup:
    correct_a = [a.label == "CORRECT" for a, _ in pairs]
    correct_b = [b.label == "CORRECT" for _, b in pairs]
    test = stats.mcnemar_exact(correct_a, correct_b)
    return PairedGroup(
        compared=len(pairs), accuracy=_score([float(c) for c in correct_a], [float(c) for c in correct_b]),
        mcnemar=McNemarCounts(both_correct=test.both, neither_correct=test.neither, only_a_correct=test.only_a,
                              only_b_correct=test.only_b, p_value=test.p_value),
        f1=_score([a.f1 for a, _ in pairs], [b.f1 for _, b in pairs]),
        bleu1=_score([a.bleu1 for a, _ in pairs], [b.bleu1 for _, b in pairs]))


def _by(pairs: list[tuple[ResultLine, ResultLine]], key: Callable[[ResultLine], object]) -> dict[str, PairedGroup]:
    groups: dict[str, list[tuple[ResultLine, ResultLine]]] = defaultdict(list)
    for pair in pairs:
        groups[str(key(pair[0]))].append(pair)  # str(None) as in summary.json
    return {name: _group(group) for name, group in sorted(groups.items())}


def _question_text(runs: tuple[_Run, _Run], user_id: int, question_id: str) -> str | None:
    for run in runs:
        path = run.dir.user(user_id).question(question_id).job
        try:
            return read_record(path, JobFile).question
        except (OSError, ValidationError):
            continue
    return None


def _flip(runs: tuple[_Run, _Run], a: ResultLine, b: ResultLine) -> QuestionFlip:
    return QuestionFlip(user_id=a.user_id, question_id=a.question_id,
                        question=_question_text(runs, a.user_id, a.question_id), language=a.language,
                        difficulty=a.difficulty, gold=a.gold, prediction_a=a.prediction, prediction_b=b.prediction,
                        label_a=a.label, label_b=b.label)


def _side(run: _Run, other: _Run) -> ComparedRun:
    model = run.plan.config.get("model")
    return ComparedRun(run_dir=str(run.dir.root), run_id=run.plan.flow_run_id,
                       model=model if isinstance(model, str) else None, started_at=run.plan.started_at,
                       scored=len(run.scored), scored_only_here=len(run.scored.keys() - other.scored.keys()))


def compare_runs(root_a: Path, root_b: Path) -> CompareFile:
    """Run B against run A (differences are B - A); raises `CompareRefused`."""
    a, b = _load(Path(root_a)), _load(Path(root_b))
    _refuse_other_datasets(a, b)
    pairs = [(a.scored[key], b.scored[key]) for key in sorted(a.scored.keys() & b.scored.keys())]
    flips = [(x, y) for x, y in pairs if x.label != y.label]
    return CompareFile(
        run_a=_side(a, b), run_b=_side(b, a), data_sha256=a.plan.data_sha256,
        questions_sha256=a.plan.questions_sha256, confidence=stats.CONFIDENCE, resamples=stats.RESAMPLES,
        seed=stats.SEED, overall=_group(pairs), by_language=_by(pairs, lambda line: line.language),
        by_difficulty=_by(pairs, lambda line: line.difficulty),
        correct_only_in_a=[_flip((a, b), x, y) for x, y in flips if x.label == "CORRECT"],
        correct_only_in_b=[_flip((a, b), x, y) for x, y in flips if y.label == "CORRECT"])
