"""Harness overhead against the ideal schedule (issues 7 and 24).

    python bench/overhead.py [--users 16 --sessions 8 --questions 20 --latency 1.0 0.2 0]
                             [--repeat N] [--db sqlite|postgres] [--json FILE]
    python bench/overhead.py --distributed N --db postgres [--latency 1.0 0.2]   # issue 25: bench/distributed.py

For each latency, `--repeat` times (default 3 at latencies under 1 s, where the server's 503s make
the ratio a lottery, else 1): a fresh simulator process with that fixed per-request latency, the
real runner (`flows/mobilemem.py`, its own process, against a Prefect server in another process, on
SQLite or on a PostgreSQL of its own), then:
- makespan_ratio = measured / ideal, where measured spans the first request's start to the last
  request's end in the simulator's log, and ideal is the event simulation of the same DAG with the
  same limits and the same number of requests per step (bench/schedule.py), with zero overhead;
  min / median / max over the repeats (the other figures are the median run's);
- the CPU floor: the CPU seconds the runner, the Prefect server (and PostgreSQL) and the simulator
  spent inside that span (sampled from /proc), over the cores, and the ratio against
  max(ideal, floor): no schedule beats the CPU the three processes need on this machine;
- the 503s the server answered, the client's retries and their total wait (bench/server_load.py),
  and the server's CPU over the run per task run and per artifact created in it (its API's counts);
- the achieved mean concurrency of answer steps (summed answer time / answer span), with the
  ideal's;
- at latency 0: the runner's CPU seconds per model request and per question, and the Prefect
  server's CPU seconds over the same run (reported separately).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness import ROOT, Processes, RunnerStats, overhead_dataset, overhead_options, read_log
from procstats import CpuSampler, tree_cpu_seconds
from schedule import Limits, QuestionWork, UserWork, ideal_schedule
from server_load import RUNNER_ENV, client_retries, log_size, object_counts, server_503s, settled_counts

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

TARGET_RATIO, TARGET_FLOOR_RATIO, TARGET_CPU_MS = 1.05, 1.3, 15.0  # issue 24: at 1 s, at 0.2 s, at 0
TARGET_503 = {"sqlite": 5, "postgres": 0}  # at 0.2 s
SPREAD = ("makespan_ratio", "makespan_ratio_vs_floor", "runner_cpu_ms_per_request")


@dataclass(frozen=True)
class Server:
    pid: int
    api: str
    log: Path
    db: str  # sqlite or postgres
    db_pid: int | None  # PostgreSQL's postmaster


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


def measure(processes: Processes, dataset: Path, latency: float, server: Server, out: Path,
            config: Path | None = None) -> dict:
    """One run of the runner at `latency`, everything in `out`."""
    out.mkdir(parents=True)
    log_path = out / "simulator.jsonl"
    simulator, url = processes.simulator(latency, log_path)
    counts, offset = object_counts(server.api), log_size(server.log)
    whole = {"server": tree_cpu_seconds(server.pid), "database": tree_cpu_seconds(server.db_pid or 0)}
    with CpuSampler() as cpu:
        cpu.watch("server", server.pid)
        cpu.watch("simulator", simulator.pid)
        if server.db_pid:
            cpu.watch("database", server.db_pid)
        stats = processes.runner(["--dataset", str(dataset), "--output", str(out / "runs"),
                                  *(["--config", str(config)] if config else [])],
                                 {"LLM_API_KEY": "bench", "LLM_BASE_URL": url, "PREFECT_API_URL": server.api,
                                  **RUNNER_ENV}, out / "runner.err", lambda pid: cpu.watch("runner", pid))
    created = {kind: n - counts[kind] for kind, n in settled_counts(server.api).items()}
    whole = {name: tree_cpu_seconds(pid or 0) - whole[name] for name, pid in
             (("server", server.pid), ("database", server.db_pid))}
    processes.started.remove(simulator)
    Processes(started=[simulator]).close()
    if stats.exit_code != 0:
        raise SystemExit(f"the runner exited with {stats.exit_code}; see {out / 'runner.err'}")
    log = read_log(log_path)
    first, last = min(r["started"] for r in log), max(r["finished"] for r in log)
    window = {name: cpu.between(name, first, last) for name in cpu.samples}
    return with_floor({**figures(out / "runs", log, latency, stats), **noise(window, server, whole, created),
                       "server_503s": server_503s(server.log, offset), **vars(client_retries(out / "runner.err"))})


def figures(output: Path, log: list[dict], latency: float, stats: RunnerStats) -> dict:
    """The run's own figures: makespan against the ideal schedule, concurrency, the runner's cost."""
    run = RunDir.for_output(output, load_config().model)
    measured = max(r["finished"] for r in log) - min(r["started"] for r in log)
    config = load_config()
    ideal = ideal_schedule(work_of(run), latency, Limits(config.user_concurrency, config.query_concurrency,
                                                         config.judge_concurrency))
    questions = len(read_record(run.run, RunFile).questions)
    summary = read_record(run.summary, SummaryFile)
    lost = [f"user {e.user_id}: {e.failure.message}" for e in read_lines(run.errors, ErrorLine) if e.stage == "run"]
    return {"latency_s": latency, "run_dir": str(run.root), "scored": summary.scored, "expected": summary.expected,
            "gaps": summary.gaps, "orchestration_errors": lost, "requests": len(log), "questions": questions,
            "measured_makespan_s": measured, "ideal_makespan_s": ideal.makespan,
            "makespan_ratio": measured / ideal.makespan if ideal.makespan else None,
            "answer_concurrency": answer_concurrency(log, run), "ideal_answer_concurrency": ideal.mean_answer_concurrency,
            "runner_wall_s": stats.wall_s, "runner_cpu_s": stats.cpu_s, "runner_peak_rss_mb": stats.peak_rss_mb,
            "runner_cpu_ms_per_request": 1000 * stats.cpu_s / len(log),
            "runner_cpu_ms_per_question": 1000 * stats.cpu_s / questions}


def noise(window: dict[str, float], server: Server, whole: dict[str, float], created: dict[str, int]) -> dict:
    """The CPU floor of the measured span and the server's load over the run."""
    cores = len(os.sched_getaffinity(0))
    floor = sum(window.values()) / cores
    return {"db": server.db, "cores": cores, "window_cpu_s": window, "cpu_floor_s": floor,
            "server_cpu_s": whole["server"], "database_cpu_s": whole["database"] if server.db_pid else None,
            "created": created,
            "server_cpu_ms_per_task_run": 1000 * whole["server"] / created["task_runs"] if created["task_runs"] else None,
            "server_cpu_ms_per_artifact": 1000 * whole["server"] / created["artifacts"] if created["artifacts"] else None}


def with_floor(run: dict) -> dict:
    bound = max(run["ideal_makespan_s"], run["cpu_floor_s"])
    return {**run, "makespan_ratio_vs_floor": run["measured_makespan_s"] / bound if bound else None}


def repeated(runs: list[dict]) -> dict:
    """The median run's figures (by makespan ratio; by CPU per request at latency 0), with every
    run and the min / median / max of the figures that vary most between runs."""
    key = "makespan_ratio" if runs[0]["makespan_ratio"] is not None else "runner_cpu_ms_per_request"
    median = statistics.median_low(r[key] for r in runs)
    chosen = next(r for r in runs if r[key] == median)
    spread = {}
    for name in SPREAD:
        values = [r[name] for r in runs if r[name] is not None]
        if values:
            spread |= {f"{name}_min": min(values), f"{name}_median": statistics.median(values),
                       f"{name}_max": max(values)}
    return {**chosen, "repeat": len(runs), **spread, "runs": runs}


def report(results: list[dict]) -> str:
    lines = []
    for r in results:
        lines.append(f"latency {r['latency_s']:g} s: {r['requests']} requests, {r['questions']} questions, "
                     f"scored {r['scored']}/{r['expected']} (run directory {r['run_dir']}, kept)")
        lines += [f"  gaps {r['gaps']}"] if r["gaps"] else []
        lines += [f"  orchestration error, {reason}" for reason in r["orchestration_errors"]]
        if r["latency_s"] > 0:
            lines += ratio_lines(r)
        else:
            cpu = r["runner_cpu_ms_per_request"]
            lines.append(f"  runner CPU {cpu:.1f} ms per model request (target <= {TARGET_CPU_MS:g}: "
                         f"{'met' if cpu <= TARGET_CPU_MS else 'MISSED'}), {r['runner_cpu_ms_per_question']:.1f} ms "
                         f"per question; Prefect server CPU {r['server_cpu_s']:.1f} s over the run")
            lines += spread_line(r, "runner_cpu_ms_per_request", "runner CPU ms per request", ".1f")
            lines.append(f"  measured span {r['measured_makespan_s']:.1f} s against the CPU floor "
                         f"{r['cpu_floor_s']:.1f} s = {r['makespan_ratio_vs_floor']:.3f}")
        lines += noise_lines(r)
        lines.append(f"  runner wall {r['runner_wall_s']:.1f} s, CPU {r['runner_cpu_s']:.1f} s, "
                     f"peak RSS {r['runner_peak_rss_mb']:.0f} MB")
    return "\n".join(lines)


def ratio_lines(r: dict) -> list[str]:
    latency, ratio = r["latency_s"], r["makespan_ratio"]
    target = f"target <= {TARGET_RATIO}: {'met' if ratio <= TARGET_RATIO else 'MISSED'}" if latency >= 1 else "no target"
    lines = [f"  makespan_ratio = {r['measured_makespan_s']:.1f} / {r['ideal_makespan_s']:.1f} s = {ratio:.3f}  ({target})"]
    lines += spread_line(r, "makespan_ratio", "makespan_ratio", ".3f")
    floor_ratio = r["makespan_ratio_vs_floor_median"]
    target = f"target <= {TARGET_FLOOR_RATIO}: {'met' if floor_ratio <= TARGET_FLOOR_RATIO else 'MISSED'}" \
        if latency == 0.2 else "no target"
    lines.append(f"  against max(ideal, CPU floor {r['cpu_floor_s']:.1f} s) = {r['makespan_ratio_vs_floor']:.3f}, "
                 f"median of {r['repeat']} {floor_ratio:.3f}  ({target})")
    lines += spread_line(r, "makespan_ratio_vs_floor", "against max(ideal, floor)", ".3f")
    lines.append(f"  answer concurrency {r['answer_concurrency']:.2f} (ideal {r['ideal_answer_concurrency']:.2f})")
    return lines


def spread_line(r: dict, name: str, label: str, fmt: str) -> list[str]:
    if r["repeat"] < 2 or f"{name}_min" not in r:
        return []
    low, mid, high = (format(r[f"{name}_{k}"], fmt) for k in ("min", "median", "max"))
    return [f"  {label} over {r['repeat']} runs: min {low}, median {mid}, max {high}"]


def noise_lines(r: dict) -> list[str]:
    window = r["window_cpu_s"]
    parts = " + ".join(f"{name} {window[name]:.1f}" for name in ("runner", "server", "database", "simulator")
                       if name in window)
    target = TARGET_503[r["db"]]
    per = [f"{r[key]:.1f} ms per {what} ({r['created'][kind]})" for key, what, kind in
           (("server_cpu_ms_per_task_run", "task run", "task_runs"), ("server_cpu_ms_per_artifact", "artifact", "artifacts"))
           if r[key] is not None]
    database = f", PostgreSQL {r['database_cpu_s']:.1f} s" if r["database_cpu_s"] is not None else ""
    return [f"  CPU floor = ({parts}) s / {r['cores']} cores = {r['cpu_floor_s']:.1f} s (inside the measured span)",
            f"  Prefect server on {r['db']}: {r['server_503s']} 503s answered (its log; target at 0.2 s <= {target}), "
            f"client retries {r['after_503']} after a 503 + {r['other']} other, waiting {r['wait_s']:.1f} s in all",
            f"  Prefect server CPU {r['server_cpu_s']:.1f} s over the run{database}: " + ", ".join(per)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    overhead_options(parser)
    parser.add_argument("--latency", type=float, nargs="+",
                        help="simulator latencies, s (default 1.0 0.2 0; with --distributed 1.0)")
    parser.add_argument("--repeat", type=int, help="runs per latency (default: 3 under 1 s, else 1)")
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite",
                        help="the Prefect server's database (postgres: deployments/postgres.sh)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--config", type=Path, help="the runner's --config (e.g. dashboard.task_artifacts: true)")
    parser.add_argument("--distributed", type=int, metavar="N",
                        help="evaluate with --workers on deployments/distributed.sh's cluster of N workers")
    parser.add_argument("--worker-poll", type=float, metavar="S",
                        help="with --distributed: the workers' PREFECT_WORKER_QUERY_SECONDS (Prefect's default 10)")
    args = parser.parse_args(argv)
    refused = distributed_refusal(args)
    if refused:
        print(f"overhead.py: {refused}", file=sys.stderr)
        return 2
    args.latency = args.latency or ([1.0] if args.distributed else [1.0, 0.2, 0.0])
    dataset = overhead_dataset(args)
    if args.distributed:
        return distributed_main(args, dataset)
    processes = Processes()
    try:
        url, db_pid = processes.postgres() if args.db == "postgres" else (None, None)
        process, api = processes.prefect_server(url)
        server = Server(process.pid, api, processes.server_log, args.db, db_pid)
        out = Path(tempfile.mkdtemp(prefix="overhead-", dir=processes.home))
        results = []
        for latency in args.latency:
            repeat = args.repeat or (3 if 0 < latency < 1 else 1)
            results.append(repeated([measure(processes, dataset, latency, server, out / f"{latency:g}-{i}", args.config)
                                     for i in range(repeat)]))
    finally:
        processes.close()
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def distributed_refusal(args: argparse.Namespace) -> str | None:
    """Why `--distributed` cannot run with these options (one line), else None."""
    if args.distributed is None:
        return "--worker-poll needs --distributed" if args.worker_poll is not None else None
    if args.distributed < 1:
        return f"--distributed needs at least 1 worker, not {args.distributed}"
    if args.db != "postgres":
        return f"--distributed needs --db postgres (distributed mode runs on PostgreSQL), not {args.db}"
    if args.config is not None:
        return "--distributed runs the default configuration: --config is not supported with it"
    if args.worker_poll is not None and args.worker_poll <= 0:
        return f"--worker-poll must be above 0 s, not {args.worker_poll:g}"
    if args.latency and min(args.latency) <= 0:
        return "--distributed needs latencies above 0 (its figures are ratios against the ideal)"
    return None


def distributed_main(args: argparse.Namespace, dataset: Path) -> int:
    import distributed  # imports this module's figures: loaded only when asked for

    results = distributed.run(args, dataset)
    print(distributed.report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
