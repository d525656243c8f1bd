"""`compare RUN_A RUN_B [--out DIR]`: run B against run A (mobilemem_judge.analysis.compare), written
as compare-<A>-vs-<B>.json and .html into the newer run's directory (or DIR), and summarized. It
imports neither Prefect nor ReMe."""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from mobilemem.metrics import score_text
from mobilemem.records import CompareFile, ComparedRun, PairedScore
from mobilemem.rundir import compare_files, write_bytes_atomic, write_record
from cli.arguments import CommandParser


def _label(run: ComparedRun) -> str:
    """A short name of a run for file names: its run id's first 8 characters (of its directory's
    path hash without one), so comparing one run with two others keeps both files. The id is the
    earlier run's word: only [A-Za-z0-9_-] of it is kept."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "", run.run_id or "")[:8]
    return safe or hashlib.sha256(str(Path(run.run_dir).resolve()).encode()).hexdigest()[:8]


def _difference(score: PairedScore) -> str:
    if score.difference is None:
        return "n/a"
    interval = "" if score.low is None else f" [{score.low:+.4f}, {score.high:+.4f}]"
    return f"{score.difference:+.4f}{interval}"


def summary_lines(result: CompareFile, json_path: Path, html_path: Path) -> list[str]:
    overall, test = result.overall, result.overall.mcnemar
    p_value = "none (no label flipped)" if test.p_value is None else f"{test.p_value:.4f}"
    return [
        f"compare: A {result.run_a.run_dir} ({result.run_a.model}) vs B {result.run_b.run_dir} ({result.run_b.model})",
        f"compared {overall.compared} questions scored in both (only in A: {result.run_a.scored_only_here}, "
        f"only in B: {result.run_b.scored_only_here})",
        f"accuracy {score_text(overall.accuracy.a)} -> {score_text(overall.accuracy.b)} "
        f"({_difference(overall.accuracy)}), McNemar exact p = {p_value}",
        f"F1 {score_text(overall.f1.a)} -> {score_text(overall.f1.b)} ({_difference(overall.f1)}); "
        f"BLEU-1 {score_text(overall.bleu1.a)} -> {score_text(overall.bleu1.b)} ({_difference(overall.bleu1)})",
        f"flipped: {len(result.correct_only_in_a)} correct in A only, "
        f"{len(result.correct_only_in_b)} correct in B only",
        f"written: {json_path} and {html_path}",
    ]


def main(argv: Sequence[str]) -> int:
    parser = CommandParser(
        prog="python flows/mobilemem.py compare",
        description="Compare run B with run A on the questions scored in both (differences are B - A).")
    parser.add_argument("run_a", type=Path, metavar="RUN_A")
    parser.add_argument("run_b", type=Path, metavar="RUN_B")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="write the files here (default: the directory of the run that started last)")
    args = parser.parse_args(argv)
    # imported here: SciPy, statsmodels and Plotly would otherwise load with every run of the CLI
    from mobilemem_judge.analysis.compare import CompareRefused, compare_runs
    from mobilemem_judge.analysis.compare_page import render_compare

    try:
        result = compare_runs(args.run_a, args.run_b)
    except CompareRefused as exc:
        print(f"mobilemem: compare: {exc}", file=sys.stderr)
        return 1
    newer = result.run_a if result.run_a.started_at > result.run_b.started_at else result.run_b
    folder = args.out or Path(newer.run_dir)
    json_path, html_path = compare_files(folder, f"{_label(result.run_a)}-vs-{_label(result.run_b)}")
    try:
        write_record(json_path, result)
        write_bytes_atomic(html_path, render_compare(result).encode())
    except OSError as exc:
        print(f"mobilemem: compare: cannot write into {folder}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    for side, run in (("A", result.run_a), ("B", result.run_b)):
        for line in run.damaged:
            print(f"mobilemem: compare: left out of run {side}: {run.run_dir}/{line}", file=sys.stderr)
    print("\n".join(summary_lines(result, json_path, html_path)))
    return 0
