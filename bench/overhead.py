"""Harness overhead against the ideal schedule (issue 7).

    python bench/overhead.py [--users 16 --sessions 8 --questions 20 --latency 1.0 0.2 0]

For each latency: a fresh simulator process with that fixed per-request latency, the real runner
(`flows/mobilemem.py`, its own process, against a Prefect server in another process), then:
- makespan_ratio = measured / ideal, where measured spans the first request's start to the last
  request's end in the simulator's log, and ideal is the event simulation of the same DAG with the
  same limits and the same number of requests per step (bench/schedule.py), with zero overhead;
- the achieved mean concurrency of answer steps (summed answer time / answer span), with the
  ideal's;
- at latency 0: the runner's CPU seconds per model request and per question, and the Prefect
  server's CPU seconds over the same run (reported separately).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from harness import ROOT, Processes, cached_dataset, cpu_seconds, read_log
from schedule import Limits, QuestionWork, UserWork, ideal_schedule

sys.path.insert(0, str(ROOT))

from mobilemem.config import load_config  # noqa: E402
from mobilemem.records import (  # noqa: E402
    AnswerResponseFile,
    ErrorLine,
    JudgmentFile,
    RunFile,
    SessionFile,
    SummaryFile,
)
from mobilemem.rundir import RunDir, read_lines, read_record  # noqa: E402

TARGET_RATIO, TARGET_CPU_MS = 1.10, 20.0


def work_of(run: RunDir) -> list[UserWork]:
    """How many model requests each step of the run made (from its own records)."""
    plan = read_record(run.run, RunFile)
    users = []
    for user_id in plan.users:
        user = run.user(user_id)
        sessions = sorted(user.sessions.glob("*.json"), key=lambda p: read_record(p, SessionFile).started_at)
        questions = []
        for planned in (q for q in plan.questions if q.user_id == user_id):
            q = user.question(planned.question_id)
            answer = read_record(q.answer_response, AnswerResponseFile) if q.answer_response.exists() else None
            judgment = read_record(q.judgment, JudgmentFile) if q.judgment.exists() else None
            questions.append(QuestionWork(len(answer.requests) if answer else 0,
                                          len(judgment.requests) if judgment else 0))
        users.append(UserWork([len(read_record(p, SessionFile).requests) for p in sessions], questions))
    return users


def answer_concurrency(log: list[dict], run: RunDir) -> float:
    """Summed answer-step time over the answer span, from the run's answer records."""
    plan = read_record(run.run, RunFile)
    spans = []
    for planned in plan.questions:
        path = run.user(planned.user_id).question(planned.question_id).answer_response
        if path.exists():
            record = read_record(path, AnswerResponseFile)
            spans.append((record.started_at.timestamp(), record.finished_at.timestamp()))
    if not spans:
        return 0.0
    busy = sum(end - start for start, end in spans)
    return busy / (max(e for _, e in spans) - min(s for s, _ in spans))


def measure(processes: Processes, dataset: Path, latency: float, api: str, server_pid: int, out: Path,
            config: Path | None = None) -> dict:
    log_path = out / f"simulator-{latency}.jsonl"
    simulator, url = processes.simulator(latency, log_path)
    server_cpu = cpu_seconds(server_pid)
    output = out / f"runs-{latency}"
    stats = processes.runner(["--dataset", str(dataset), "--output", str(output),
                              *(["--config", str(config)] if config else [])],
                             {"LLM_API_KEY": "bench", "LLM_BASE_URL": url, "PREFECT_API_URL": api})
    server_cpu = cpu_seconds(server_pid) - server_cpu
    processes.started.remove(simulator)
    Processes(started=[simulator]).close()
    if stats.exit_code != 0:
        raise SystemExit(f"the runner exited with {stats.exit_code}; see {processes.home / 'runner.err'}")
    run = RunDir.for_output(output, load_config().model)
    log = read_log(log_path)
    measured = max(r["finished"] for r in log) - min(r["started"] for r in log)
    config = load_config()
    ideal = ideal_schedule(work_of(run), latency, Limits(config.user_concurrency, config.query_concurrency,
                                                         config.judge_concurrency))
    questions = len(read_record(run.run, RunFile).questions)
    summary = read_record(run.summary, SummaryFile)
    lost = [f"user {e.user_id}: {e.reason}" for e in read_lines(run.errors, ErrorLine) if e.stage == "run"]
    return {"latency_s": latency, "run_dir": str(run.root), "scored": summary.scored, "expected": summary.expected,
            "gaps": summary.gaps, "orchestration_errors": lost, "requests": len(log), "questions": questions, "measured_makespan_s": measured,
            "ideal_makespan_s": ideal.makespan, "makespan_ratio": measured / ideal.makespan if ideal.makespan else None,
            "answer_concurrency": answer_concurrency(log, run), "ideal_answer_concurrency": ideal.mean_answer_concurrency,
            "runner_wall_s": stats.wall_s, "runner_cpu_s": stats.cpu_s, "runner_peak_rss_mb": stats.peak_rss_mb,
            "runner_cpu_ms_per_request": 1000 * stats.cpu_s / len(log),
            "runner_cpu_ms_per_question": 1000 * stats.cpu_s / questions, "server_cpu_s": server_cpu}


def report(results: list[dict]) -> str:
    lines = []
    for r in results:
        lines.append(f"latency {r['latency_s']:g} s: {r['requests']} requests, {r['questions']} questions, "
                     f"scored {r['scored']}/{r['expected']} (run directory {r['run_dir']}, kept)")
        lines += [f"  gaps {r['gaps']}"] if r["gaps"] else []
        lines += [f"  orchestration error, {reason}" for reason in r["orchestration_errors"]]
        if r["latency_s"] > 0:
            target = f"target <= {TARGET_RATIO}: {'met' if r['makespan_ratio'] <= TARGET_RATIO else 'MISSED'}" \
                if r["latency_s"] >= 1 else "no target"
            lines.append(f"  makespan_ratio = {r['measured_makespan_s']:.1f} / {r['ideal_makespan_s']:.1f} s = "
                         f"{r['makespan_ratio']:.3f}  ({target})")
            lines.append(f"  answer concurrency {r['answer_concurrency']:.2f} (ideal {r['ideal_answer_concurrency']:.2f})")
        else:
            cpu = r["runner_cpu_ms_per_request"]
            lines.append(f"  runner CPU {cpu:.1f} ms per model request (target <= {TARGET_CPU_MS:g}: "
                         f"{'met' if cpu <= TARGET_CPU_MS else 'MISSED'}), {r['runner_cpu_ms_per_question']:.1f} ms "
                         f"per question; Prefect server CPU {r['server_cpu_s']:.1f} s over the run")
        lines.append(f"  runner wall {r['runner_wall_s']:.1f} s, CPU {r['runner_cpu_s']:.1f} s, "
                     f"peak RSS {r['runner_peak_rss_mb']:.0f} MB")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--images", type=int, default=3)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--latency", type=float, nargs="+", default=[1.0, 0.2, 0.0])
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--config", type=Path, help="the runner's --config (e.g. dashboard.task_artifacts: false)")
    args = parser.parse_args(argv)
    dataset = cached_dataset(args.cache, users=args.users, sessions=args.sessions, turns=args.turns,
                             images=args.images, questions=args.questions, image_size=(320, 240))
    processes = Processes()
    try:
        server, api = processes.prefect_server()
        out = Path(tempfile.mkdtemp(prefix="overhead-", dir=processes.home))
        results = [measure(processes, dataset, latency, api, server.pid, out, args.config) for latency in args.latency]
    finally:
        processes.close()
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
