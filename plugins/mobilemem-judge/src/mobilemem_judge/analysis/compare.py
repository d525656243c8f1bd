"""`compare RUN_A RUN_B`: run B against run A on the questions both scored, as a `CompareFile`.

A pure function of the two run directories (run.json, results.jsonl, job.json), read through
`mobilemem.run_reader`: a damaged run.json refuses, a damaged results line is left out of the
comparison and listed in the run's `damaged`. Accuracy with the
exact McNemar test, accuracy, F1 and BLEU-1 differences (B - A) with paired bootstrap intervals,
overall and by language and difficulty, and the questions whose label flipped either way. Runs of
different datasets are refused (`mobilemem.dataset_identity.first_difference`: data.jsonl,
questions.jsonl, and the image hashes of every user in both runs), and so is a run made before
run.json recorded image hashes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

from mobilemem.dataset_identity import DatasetIdentity, first_difference
from mobilemem.errors import MobilememError
from mobilemem.records import (CompareFile, ComparedRun, JobFile, McNemarCounts, PairedGroup, PairedScore,
                               QuestionFlip, ResultLine, RunFile)
from mobilemem.rundir import RunDir
from mobilemem.run_reader import DamagedFile, NotARunDirectory, RunReader
from mobilemem_judge.analysis import stats


class CompareRefused(MobilememError):
    """A run directory is missing or unreadable, or the two runs evaluated different datasets (or
    cannot be told to have evaluated the same one)."""


@dataclass(frozen=True)
class _Run:
    reader: RunReader
    scored: dict[tuple[int, str], ResultLine]

    @property
    def dir(self) -> RunDir:
        return self.reader.run

    @property
    def plan(self) -> RunFile:
        return self.reader.plan


def _load(root: Path) -> _Run:
    try:
        reader = RunReader.open(root)
        if reader.bytes_of(reader.run.results) is None:
            raise CompareRefused(f"{root} has no results.jsonl (`python flows/mobilemem.py summarize RUN_DIR` "
                                 "writes it)")
    except (NotARunDirectory, DamagedFile) as exc:
        raise CompareRefused(str(exc)) from None
    lines = reader.lines(reader.run.results, ResultLine, tolerant=True)
    return _Run(reader, {(line.user_id, line.question_id): line for line in lines if line.status == "scored"})


def _refuse_other_datasets(a: _Run, b: _Run) -> None:
    difference = first_difference(DatasetIdentity.of_run(a.plan, str(a.dir.root)),
                                  DatasetIdentity.of_run(b.plan, str(b.dir.root)))
    if difference:
        raise CompareRefused(difference)


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
        job = run.reader.tolerant(run.dir.user(user_id).question(question_id).job, JobFile)
        if job is not None:
            return job.question
    return None


def _flip(runs: tuple[_Run, _Run], a: ResultLine, b: ResultLine) -> QuestionFlip:
    return QuestionFlip(user_id=a.user_id, question_id=a.question_id,
                        question=_question_text(runs, a.user_id, a.question_id), language=a.language,
                        difficulty=a.difficulty, gold=a.gold, prediction_a=a.prediction, prediction_b=b.prediction,
                        label_a=a.label, label_b=b.label)


def _side(run: _Run, other: _Run) -> ComparedRun:
    return ComparedRun(run_dir=str(run.dir.root), run_id=run.plan.flow_run_id,
                       model=run.plan.config.model, started_at=run.plan.started_at,
                       scored=len(run.scored), scored_only_here=len(run.scored.keys() - other.scored.keys()),
                       damaged=run.reader.damaged)


def compare_runs(root_a: Path, root_b: Path) -> CompareFile:
    """Run B against run A (differences are B - A); raises `CompareRefused`."""
    a, b = _load(Path(root_a)), _load(Path(root_b))
    _refuse_other_datasets(a, b)
    pairs = [(a.scored[key], b.scored[key]) for key in sorted(a.scored.keys() & b.scored.keys())]
    flips = [(x, y) for x, y in pairs if x.label != y.label]
    only_a = [_flip((a, b), x, y) for x, y in flips if x.label == "CORRECT"]
    only_b = [_flip((a, b), x, y) for x, y in flips if y.label == "CORRECT"]
    return CompareFile(
        run_a=_side(a, b), run_b=_side(b, a), data_sha256=a.plan.data_sha256,
        questions_sha256=a.plan.questions_sha256, confidence=stats.CONFIDENCE, resamples=stats.RESAMPLES,
        seed=stats.SEED, overall=_group(pairs), by_language=_by(pairs, lambda line: line.language),
        by_difficulty=_by(pairs, lambda line: line.difficulty), correct_only_in_a=only_a, correct_only_in_b=only_b)
