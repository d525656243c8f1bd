"""`bench/overhead.py --distributed N --db postgres` (issue 25): the overhead bench's dataset and
ideal, evaluated with `--workers mobilemem` on deployments/distributed.sh's cluster (PostgreSQL, a
Prefect server on it, the process pool and N workers with `--limit 2`).

Per latency: a fresh simulator, then `distributed.sh up` in a folder of its own (the workers inherit
the simulator's LLM_BASE_URL from the environment `up` is called with), the parent runner in its own
process, then the figures, then `down`. The cluster's logs are copied next to the run directory,
which is kept. Timings come from the user runs' state histories (the Prefect API) and the records
(bench/distributed_figures.py); CPU from /proc of the PIDs in DIR/pids.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import httpx

from distributed_figures import UserRun, limits, user_phases, user_records
from harness import ROOT, Processes, read_log
from overhead import figures, with_floor, work_of
from procstats import CpuSampler, tree_cpu_seconds
from schedule import Limits, ideal_schedule
from server_load import RUNNER_ENV, client_retries, server_503s

from mobilemem.config import load_config
from mobilemem.records import HostFile, RunFile
from mobilemem.rundir import RunDir, read_record

SCRIPT = ROOT / "deployments" / "distributed.sh"
POOL = "mobilemem"
WORKER_LIMIT = 2  # distributed.sh starts every worker with --limit 2
TARGET_RATIO = 1.15  # issue 25, at 1 s with fixed limits
UP_TIMEOUT_S = 900
FINAL = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")
STRIPPED = ("PREFECT_", "LLM_", "JUDGE_", "EMBEDDING_")  # the cluster's own settings and credentials only


def clean_environment() -> None:
    """Drop the caller's Prefect settings and model credentials from this process's environment:
    Processes.runner starts the parent with os.environ underneath the cluster's settings."""
    for name in [n for n in os.environ if n.startswith(STRIPPED) or n == "DO_NOT_TRACK"]:
        del os.environ[name]


def cluster_environment(folder: Path, simulator_url: str, worker_poll_s: float | None) -> dict[str, str]:
    """What `up` (and so every worker) runs with: the venv first on PATH, the simulator's
    credentials, 503s logged by the server, the client's retries logged by every process, and the
    workers' poll interval when given."""
    poll = {"PREFECT_WORKER_QUERY_SECONDS": str(worker_poll_s)} if worker_poll_s else {}
    return {**os.environ, **poll, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PREFECT_HOME": str(folder / "prefect-home"), "LLM_BASE_URL": simulator_url, "LLM_API_KEY": "bench",
            "PREFECT_SERVER_LOG_RETRYABLE_ERRORS": "true", **RUNNER_ENV}


def up(folder: Path, workers: int, env: dict[str, str]) -> tuple[dict[str, str], dict[str, int]]:
    """`distributed.sh up`: the client's settings (DIR/env) and the PIDs (DIR/pids)."""
    done = subprocess.run([str(SCRIPT), "up", str(folder), str(workers)], env=env, capture_output=True, text=True,
                          timeout=UP_TIMEOUT_S, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise SystemExit(f"distributed.sh up failed: {done.stderr.strip()[-2000:]}")
    sourced = dict(line.removeprefix("export ").partition("=")[::2] for line in (folder / "env").read_text().splitlines())
    pids = {name: int(pid) for name, pid in (line.split() for line in (folder / "pids").read_text().splitlines())}
    return sourced, pids


def down(folder: Path, env: dict[str, str], keep: Path) -> None:
    """`distributed.sh down`, the cluster's logs copied to `keep`, its folder removed."""
    subprocess.run([str(SCRIPT), "down", str(folder)], env=env, capture_output=True, timeout=300)
    keep.mkdir(parents=True, exist_ok=True)
    for log in folder.glob("*.log"):
        shutil.copy(log, keep / log.name)
    shutil.rmtree(folder, ignore_errors=True)


def user_runs(api: str, run: RunDir) -> dict[int, UserRun]:
    """Every user's run (by host.json's flow_run_id) from its state history."""
    runs = {}
    with httpx.Client(timeout=30, trust_env=False) as client:
        for user_id in read_record(run.run, RunFile).users:
            host = run.user(user_id).host
            if not host.exists():
                continue
            flow_run_id = read_record(host, HostFile).flow_run_id
            states = client.get(f"{api}/flow_run_states/", params={"flow_run_id": flow_run_id}).raise_for_status()
            moments = sorted((datetime.fromisoformat(s["timestamp"]).timestamp(), s["type"]) for s in states.json())
            runs[user_id] = UserRun(requested=moments[0][0],
                                    pending=next((t for t, kind in moments if kind == "PENDING"), None),
                                    running=next((t for t, kind in moments if kind == "RUNNING"), None),
                                    final=next((t for t, kind in moments if kind in FINAL), None))
    return runs


def measure(processes: Processes, dataset: Path, latency: float, workers: int, out: Path,
            worker_poll_s: float | None = None) -> dict:
    """One distributed run at `latency` on a cluster of `workers` workers brought up for it."""
    out.mkdir(parents=True)
    log_path = out / "simulator.jsonl"
    simulator, url = processes.simulator(latency, log_path)
    folder = Path(tempfile.mkdtemp(prefix="mobilemem-bench-distributed-", dir="/tmp"))
    folder.chmod(0o755)  # the postgres user must reach DIR/postgres
    env = cluster_environment(folder, url, worker_poll_s)
    try:
        client_env, pids = up(folder, workers, env)
        run, stats, window, whole = _run_parent(processes, dataset, out, {**env, **client_env}, pids, simulator.pid)
        runs = user_runs(client_env["PREFECT_API_URL"], run)
        retries = [client_retries(out / "runner.err"), *(client_retries(folder / f"{w}.log") for w in pids
                                                         if w.startswith("worker-"))]
        served_503 = server_503s(folder / "prefect-server.log", 0)
    finally:
        down(folder, env, out / "cluster")
        processes.started.remove(simulator)
        Processes(started=[simulator]).close()
    if stats.exit_code != 0:
        raise SystemExit(f"the parent runner exited with {stats.exit_code}; see {out / 'runner.err'}")
    log = read_log(log_path)
    result = with_floor({**figures(out / "runs", log, latency, stats), **_cpu(window, whole)})
    return {**result, **per_question(result), **_schedule(run, runs, latency, workers), "workers": workers,
            "worker_poll_s": worker_poll_s,
            "server_503s": served_503,
            "client_retries_after_503": sum(r.after_503 for r in retries),
            "client_retries_other": sum(r.other for r in retries), "client_wait_s": sum(r.wait_s for r in retries)}


def _run_parent(processes: Processes, dataset: Path, out: Path, env: dict[str, str], pids: dict[str, int],
                simulator_pid: int):
    """The parent runner with `--workers`, CPU sampled in the window and counted over the whole run."""
    watched = {"server": pids["server"], "database": pids["postgres"], "simulator": simulator_pid,
               **{name: pid for name, pid in pids.items() if name.startswith("worker-")}}
    before = {name: tree_cpu_seconds(pid) for name, pid in watched.items()}
    with CpuSampler() as cpu:
        for name, pid in watched.items():
            cpu.watch(name, pid)
        stats = processes.runner(["--dataset", str(dataset), "--output", str(out / "runs"), "--workers", POOL], env,
                                 out / "runner.err", lambda pid: cpu.watch("runner", pid))
    whole = {name: tree_cpu_seconds(pid) - before[name] for name, pid in watched.items()}
    log = read_log(out / "simulator.jsonl")
    first, last = (min(r["started"] for r in log), max(r["finished"] for r in log)) if log else (0.0, 0.0)
    window = {name: cpu.between(name, first, last) for name in cpu.samples}
    return RunDir.for_output(out / "runs", load_config().model), stats, window, whole


def _cpu(window: dict[str, float], whole: dict[str, float]) -> dict:
    cores = len(os.sched_getaffinity(0))
    return {"db": "postgres", "cores": cores, "window_cpu_s": window, "cpu_floor_s": sum(window.values()) / cores,
            "server_cpu_s": whole["server"], "database_cpu_s": whole["database"],
            "workers_cpu_s": sum(cpu for name, cpu in whole.items() if name.startswith("worker-"))}


def _schedule(run: RunDir, runs: dict[int, UserRun], latency: float, workers: int) -> dict:
    """Per-user phases, per-limit slots, the ideal at the workers' capacity, and CPU per question."""
    config = load_config()
    records = {user_id: user_records(run, user_id) for user_id in runs}
    capacity = min(config.user_concurrency, workers * WORKER_LIMIT)
    at_capacity = ideal_schedule(work_of(run), latency, Limits(capacity, config.query_concurrency,
                                                               config.judge_concurrency))
    slots = limits(runs, records, {"questions": config.query_concurrency, "judgments": config.judge_concurrency,
                                   "users": config.user_concurrency, "worker_slots": workers * WORKER_LIMIT})
    return {"user_phases": user_phases(runs, records), "limits": slots, "user_runs": len(runs),
            "user_run_times": {user_id: vars(run) for user_id, run in runs.items()},
            "ideal_at_worker_capacity_s": at_capacity.makespan, "worker_capacity": capacity}


def per_question(r: dict) -> dict:
    """Server and PostgreSQL CPU per question, ms."""
    return {"server_cpu_ms_per_question": 1000 * r["server_cpu_s"] / r["questions"],
            "database_cpu_ms_per_question": 1000 * r["database_cpu_s"] / r["questions"]}


def report(results: list[dict]) -> str:
    lines = []
    for r in results:
        poll = f"{r['worker_poll_s']:g} s" if r["worker_poll_s"] else "distributed.sh's 1 s"
        lines.append(f"distributed, {r['workers']} worker(s) x --limit {WORKER_LIMIT} (poll {poll}), "
                     f"latency {r['latency_s']:g} s: "
                     f"{r['requests']} requests, {r['questions']} questions, scored {r['scored']}/{r['expected']}, "
                     f"{r['user_runs']} user runs (run directory {r['run_dir']}, kept)")
        lines += [f"  gaps {r['gaps']}"] if r["gaps"] else []
        lines += [f"  orchestration error, {reason}" for reason in r["orchestration_errors"]]
        ratio = r["makespan_ratio"]
        target = f"target <= {TARGET_RATIO}: {'met' if ratio <= TARGET_RATIO else 'MISSED'}" if r["latency_s"] >= 1 \
            else "no target"
        lines.append(f"  makespan_ratio = {r['measured_makespan_s']:.1f} / {r['ideal_makespan_s']:.1f} s = {ratio:.3f}"
                     f"  ({target}); against the ideal at the workers' {r['worker_capacity']} user slots "
                     f"({r['ideal_at_worker_capacity_s']:.1f} s): "
                     f"{r['measured_makespan_s'] / r['ideal_at_worker_capacity_s']:.3f}")
        lines.append(f"  parent runner wall {r['runner_wall_s']:.1f} s (the span above runs from the first model "
                     "request to the last, so the first users' scheduling is outside it)")
        lines.append(f"  against max(ideal, CPU floor {r['cpu_floor_s']:.1f} s) = {r['makespan_ratio_vs_floor']:.3f}; "
                     f"answer concurrency {r['answer_concurrency']:.2f} (ideal {r['ideal_answer_concurrency']:.2f})")
        lines += phase_lines(r) + limit_lines(r) + load_lines(r)
    return "\n".join(lines)


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def phase_lines(r: dict) -> list[str]:
    p = r["user_phases"]
    return [f"  per-user medians: scheduling {_s(p['scheduling_s_median'])} (start request -> Running; -> a worker "
            f"took it {_s(p['pickup_s_median'])}), start-up "
            f"{_s(p['startup_s_median'])} (Running -> first model request; -> flow body {_s(p['startup_to_body_s_median'])}), "
            f"teardown {_s(p['teardown_s_median'])} (last record -> final state)"]


def limit_lines(r: dict) -> list[str]:
    lines = []
    for name, f in r["limits"].items():
        gaps = "no hand-off while waiting" if not f["handoffs"] else (
            f"{f['handoffs']} hand-offs while waiting: median {f['handoff_median_ms']:.0f} ms, "
            f"p90 {f['handoff_p90_ms']:.0f} ms, max {f['handoff_max_ms']:.0f} ms")
        lines.append(f"  limit {name} ({f['capacity']}): peak {f['peak']}, mean held {f['mean_held']:.2f}, "
                     f"all held {100 * f['full_share']:.1f} % of its span; {gaps}")
    return lines


def load_lines(r: dict) -> list[str]:
    window = " + ".join(f"{name} {cpu:.1f}" for name, cpu in r["window_cpu_s"].items())
    return [f"  503s answered by the server: {r['server_503s']} (target 0); client retries "
            f"{r['client_retries_after_503']} after a 503 + {r['client_retries_other']} other, "
            f"waiting {r['client_wait_s']:.1f} s",
            f"  CPU per question: Prefect server {r['server_cpu_ms_per_question']:.0f} ms, PostgreSQL "
            f"{r['database_cpu_ms_per_question']:.0f} ms (over the run: {r['server_cpu_s']:.1f} s, "
            f"{r['database_cpu_s']:.1f} s; workers and their flow runs {r['workers_cpu_s']:.1f} s, parent "
            f"{r['runner_cpu_s']:.1f} s)",
            f"  CPU floor = ({window}) s / {r['cores']} cores = {r['cpu_floor_s']:.1f} s (inside the measured span)"]


def run(args, dataset: Path) -> list[dict]:
    """Every latency of `args` on a cluster of `args.distributed` workers, one cluster per run."""
    clean_environment()
    processes = Processes()
    try:
        out = Path(tempfile.mkdtemp(prefix="overhead-distributed-", dir=processes.home))
        return [measure(processes, dataset, latency, args.distributed, out / f"{latency:g}-{i}", args.worker_poll)
                for latency in args.latency for i in range(args.repeat or 1)]
    finally:
        processes.close()
