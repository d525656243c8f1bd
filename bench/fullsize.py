"""One user at the real dataset's scale, through the real product (issue 7).

    python bench/fullsize.py [--sessions 200] [--turns 48] [--images 6] [--size 2048] [--noise 24]
        [--questions 20] [--growth-users 4] [--growth-sessions 25] [--skip-growth]
        [--cache DIR] [--keep] [--json FILE]

A one-user dataset (generated once, cached under ``bench/.cache/<parameters>/``) goes through
``flows/mobilemem.py``, run as a child process against the simulator (latency 0) and a Prefect
server, each its own process. One ``name value unit target status`` line per figure:
- peak RSS of the runner (``os.wait4`` rusage of that child) and of the Prefect server (VmHWM);
- ingest throughput over the ingest wall time (first ``started_at`` .. last ``finished_at`` of
  ``users/<uid>/sessions/*.json``): sessions/s, and MB/s of the image bytes the model received
  (``workspace/session/images``, ReMe's saved attachments);
- index build time (``index-response.json`` ``build_seconds``);
- ``bm25_search`` p50/p95 over 1,000 queries of words drawn (fixed seed, with their frequency)
  from the indexed notes and transcripts, on the run's own index loaded here, after 10 warm-ups;
- the run directory's size;
- growth: ``--growth-users`` users run one after another (``--user-concurrency 1``), the runner's
  VmRSS sampled every 0.2 s; each user's peak over its interval (first session ``started_at`` ..
  last judgment ``finished_at``) and last minus first.
MB = 10^6 bytes. Measured once: a missed target is reported, never asserted. Exit status 0, or 1
when a run or a service failed (the figures measured so far are still printed).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from mobilemem.rundir import RunDir, UserDir
from generated import ensure_cached
from procstats import RssSampler, start_group, status_bytes, stop_group

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT / "examples" / "generate_sample.py"
MB = 1_000_000
SAMPLE_INTERVAL = 0.2
SEARCH_QUERIES, SEARCH_WARMUP, SEARCH_SEED = 1_000, 10, 7
TARGETS = {"runner_peak_rss": 1_000.0, "index_build": 3.0, "search_p95": 10.0}  # upper bounds: MB, s, ms


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear between the closest ranks (numpy's default method)."""
    if not values or not 0 <= q <= 100:
        raise ValueError(f"percentile {q} of {len(values)} values")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def interval_peaks(samples: Sequence[tuple[float, int]],
                   intervals: dict[int, tuple[float, float]]) -> dict[int, int | None]:
    """The largest sample within each (start, end) interval, bounds included; an interval that no
    sample falls in gets the sample nearest its midpoint (None only when there is no sample)."""
    peaks: dict[int, int | None] = {}
    for key, (start, end) in intervals.items():
        inside = [rss for t, rss in samples if start <= t <= end]
        middle = (start + end) / 2
        nearest = min(samples, key=lambda s: abs(s[0] - middle))[1] if samples else None
        peaks[key] = max(inside) if inside else nearest
    return peaks


def make_queries(words: Sequence[str], count: int, seed: int) -> list[str]:
    """``count`` queries of 1-5 words drawn (with their frequency) from ``words``."""
    if not words:
        raise ValueError("no words to draw queries from")
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 5))) for _ in range(count)]


@dataclass
class Figure:
    name: str
    value: float
    unit: str
    target: float | None = None  # an upper bound, in `unit`

    @property
    def status(self) -> str:
        return "-" if self.target is None else "met" if self.value <= self.target else "MISSED"

    def line(self) -> str:
        target = "-" if self.target is None else f"<={self.target:g}"
        return f"{self.name:<36} {self.value:>11.3f} {self.unit:<11} {target:<8} {self.status}"

    def as_json(self) -> dict:
        return {"value": self.value, "unit": self.unit, "target": self.target, "status": self.status}


def _span(path: Path) -> tuple[float, float]:
    record = json.loads(path.read_text(encoding="utf-8"))
    return (datetime.fromisoformat(record["started_at"]).timestamp(),
            datetime.fromisoformat(record["finished_at"]).timestamp())


def ingest_interval(user: UserDir) -> tuple[float, float, int]:
    """(first session started_at, last session finished_at) as unix times, and the session count."""
    spans = [_span(p) for p in user.sessions.glob("*.json")]
    if not spans:
        raise RuntimeError(f"{user.root}: no session files")
    return min(s for s, _ in spans), max(e for _, e in spans), len(spans)


def user_interval(user: UserDir) -> tuple[float, float]:
    """First session started_at .. last judgment finished_at (the last session's end if none)."""
    start, end, _ = ingest_interval(user)
    return start, max([end, *(_span(p)[1] for p in (user.root / "questions").glob("*/judgment.json"))])


def tree_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


@dataclass(frozen=True)
class DatasetSpec:
    users: int
    sessions: int
    turns: int
    images: int
    questions: int
    size: int
    noise: int
    seed: int = 0

    def arguments(self) -> list[str]:
        return ["--users", str(self.users), "--sessions", str(self.sessions), "--turns", str(self.turns),
                "--images", str(self.images), "--questions", str(self.questions), "--seed", str(self.seed),
                "--image-size", f"{self.size}x{self.size}", "--image-format", "jpeg", "--noise", str(self.noise)]

    def key(self) -> str:
        """The cache folder: the parameters and a digest of the generator's sources."""
        sources = b"".join(p.read_bytes() for p in (GENERATOR, GENERATOR.with_name("sample_text.py")))
        return (f"u{self.users}-s{self.sessions}-t{self.turns}-i{self.images}-q{self.questions}-{self.size}px-"
                f"jpeg-n{self.noise}-seed{self.seed}-{hashlib.sha256(sources).hexdigest()[:10]}")


def ensure_dataset(spec: DatasetSpec, cache: Path) -> tuple[Path, float]:
    """The cached, extracted dataset (generated first when missing) and the seconds generating took."""
    def generate(partial: Path) -> None:
        subprocess.run([sys.executable, str(GENERATOR), "--out", str(partial), *spec.arguments(), "--extract"],
                       check=True, stdout=subprocess.DEVNULL)

    return ensure_cached(cache / spec.key(), generate, " ".join(spec.arguments()))


def dataset_and_repeat(argv: Sequence[str] | None, prog: str, description: str) -> tuple[Path, int]:
    """For the benchmarks that time preflight on the full-size user's dataset: that dataset (made
    from this script's dataset options; its other options are accepted and ignored) and --repeat."""
    args, rest = build_parser().parse_known_args(argv)
    repeat = argparse.ArgumentParser(prog=prog, description=description)
    repeat.add_argument("--repeat", type=int, default=3, help="timings of each kind (default 3)")
    spec = DatasetSpec(1, args.sessions, args.turns, args.images, args.questions, args.size, args.noise)
    return ensure_dataset(spec, args.cache)[0], repeat.parse_args(rest).repeat


def _base_env() -> dict[str, str]:
    """This environment without the caller's model credentials or Prefect settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "JUDGE_", "PREFECT_"))}


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:] if log.exists() else ""


def _wait_for(check: Callable[[], bool], process: subprocess.Popen, log: Path, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{log.stem} exited with status {process.returncode}:\n{_tail(log)}")
        if check():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{log.stem} did not start within {timeout:.0f} s:\n{_tail(log)}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthy(api: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


class Services:
    """The simulator and the Prefect server, each its own process group; every process started
    here (runners included) is stopped when ``stack`` closes."""

    def __init__(self, work: Path, stack: ExitStack, pids: dict[str, int]) -> None:
        self.work, self.stack = work, stack
        self.pids = pids  # name -> pid (= its process group id), filled as processes start
        self.processes: dict[str, subprocess.Popen] = {}
        self.base_url = self.api_url = ""

    def spawn(self, name: str, cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
        process = start_group(cmd, env, self.work / f"{name}.log", ROOT)
        self.stack.callback(stop_group, process)
        self.pids[name], self.processes[name] = process.pid, process
        return process

    def start(self) -> None:
        log, port = self.work / "simulator.log", _free_port()
        simulator = self.spawn("simulator", [sys.executable, "-m", "mobilemem.simulator", "--port", "0", "--latency",
                                             "0", "--log", str(self.work / "simulator-requests.jsonl")], _base_env())
        self.api_url = f"http://127.0.0.1:{port}/api"
        server = self.spawn("prefect_server", [sys.executable, "-m", "prefect", "server", "start", "--host",
                                               "127.0.0.1", "--port", str(port)],
                            {**_base_env(), "PREFECT_HOME": str(self.work / "prefect-server-home"),
                             "PREFECT_SERVER_ANALYTICS_ENABLED": "false"})

        def listening() -> bool:
            lines = [x for x in _tail(log).splitlines() if x.startswith("simulator listening on ")]
            self.base_url = lines[0].split()[-1] if lines else ""
            return bool(lines)

        _wait_for(listening, simulator, log, timeout=60)
        _wait_for(lambda: _healthy(self.api_url), server, self.work / "prefect_server.log")

    def peak_mb(self, name: str) -> float:
        peak = status_bytes(self.pids[name], "VmHWM")
        if peak is None:
            raise RuntimeError(f"{name} exited before its peak RSS was read:\n{_tail(self.work / f'{name}.log')}")
        return peak / MB

    def run_runner(self, name: str, dataset: Path, output: Path, *extra: str) -> RunnerResult:
        """``flows/mobilemem.py`` as a child: its own rusage (``os.wait4``) and VmRSS samples."""
        env = {**_base_env(), "LLM_API_KEY": "sk-bench-simulated", "LLM_BASE_URL": self.base_url,
               "PREFECT_API_URL": self.api_url, "PREFECT_HOME": str(self.work / "prefect-client-home")}
        started = time.monotonic()
        process = self.spawn(name, [sys.executable, str(ROOT / "flows" / "mobilemem.py"), "--dataset", str(dataset),
                                    "--output", str(output), *extra], env)
        with RssSampler(process.pid, SAMPLE_INTERVAL) as sampler:
            _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: tell Popen
        run = RunDir.for_output(output, "qwen3.8-max")
        (self.work / f"{name}-rss.csv").write_text("".join(f"{t:.3f},{rss}\n" for t, rss in sampler.samples))
        if process.returncode != 0 or not run.summary.is_file():
            raise RuntimeError(f"{name} exited with status {process.returncode}:\n{_tail(self.work / f'{name}.log')}")
        return RunnerResult(wall=time.monotonic() - started, cpu=usage.ru_utime + usage.ru_stime,
                            maxrss=usage.ru_maxrss * 1024, samples=sampler.samples, run=run)


@dataclass
class RunnerResult:
    wall: float
    cpu: float
    maxrss: int  # bytes
    samples: list[tuple[float, int]]
    run: RunDir

    def users(self) -> list[tuple[int, UserDir]]:
        ids = sorted(int(p.name) for p in (self.run.root / "users").iterdir())
        return [(uid, self.run.user(uid)) for uid in ids]


def search_latencies(workspace: Path, count: int = SEARCH_QUERIES, seed: int = SEARCH_SEED) -> list[float]:
    """Seconds per call of ReMe's `bm25_search` job on a run's own workspace, after a warm-up."""
    return asyncio.run(_search_latencies(workspace, count, seed))


async def _search_latencies(workspace: Path, count: int, seed: int) -> list[float]:
    import re  # noqa: PLC0415

    from mobilemem.config import load_config  # noqa: PLC0415
    from mobilemem.models import Endpoint, build_chat_model, close_chat_model  # noqa: PLC0415
    from mobilemem.reme.app import open_user_app  # noqa: PLC0415

    config = load_config()
    model = build_chat_model(Endpoint.simulated("candidate", config, "http://127.0.0.1:9/v1"), config.candidate)
    app = await open_user_app(workspace, model, config.candidate)  # search makes no model request
    try:
        words = [w for note in sorted((workspace / "daily").rglob("*.md"))
                 for w in re.findall(r"\w{3,}", note.read_text(encoding="utf-8"))]
        queries = make_queries(words, SEARCH_WARMUP + count, seed)
        for query in queries[:SEARCH_WARMUP]:
            await app.run_job("bm25_search", query=query)
        timings = []
        for query in queries[SEARCH_WARMUP:]:
            started = time.perf_counter()
            response = await app.run_job("bm25_search", query=query)
            timings.append(time.perf_counter() - started)
            if not response.success:
                raise RuntimeError(f"bm25_search failed: {response.answer}")
        return timings
    finally:
        await app.close()
        await close_chat_model(model)


def full_figures(result: RunnerResult) -> list[Figure]:
    ((_, user),) = result.users()
    start, end, sessions = ingest_interval(user)
    images = tree_bytes(user.workspace / "session" / "images") / MB
    index = json.loads(user.index_response.read_text(encoding="utf-8"))
    summary = json.loads(result.run.summary.read_text(encoding="utf-8"))
    return [Figure("runner_peak_rss", result.maxrss / MB, "MB", TARGETS["runner_peak_rss"]),
            Figure("runner_cpu", result.cpu, "s"), Figure("runner_wall", result.wall, "s"),
            Figure("ingest_sessions", sessions, "sessions"), Figure("ingest_wall", end - start, "s"),
            Figure("ingest_sessions_per_s", sessions / (end - start), "sessions/s"),
            Figure("ingest_image_mb", images, "MB"), Figure("ingest_image_mb_per_s", images / (end - start), "MB/s"),
            Figure("index_build", float(index["build_seconds"]), "s", TARGETS["index_build"]),
            Figure("index_chunks", float(index["chunks"]), "chunks"),
            Figure("questions_scored", float(summary["scored"]), "questions"),
            Figure("technical_gaps", float(sum(sum(r.values()) for r in summary["gaps"].values())), "gaps"),
            Figure("run_dir_size", tree_bytes(result.run.root) / MB, "MB")]


def growth_figures(result: RunnerResult) -> list[Figure]:
    intervals = {uid: user_interval(user) for uid, user in result.users()}
    peaks = interval_peaks(result.samples, intervals)
    order = sorted(intervals, key=lambda uid: intervals[uid][0])
    first, last = peaks[order[0]] or 0, peaks[order[-1]] or 0
    return [*(Figure(f"growth_user{uid}_peak_rss", (peaks[uid] or 0) / MB, "MB") for uid in order),
            Figure("growth_last_minus_first", (last - first) / MB, "MB"),
            Figure("growth_runner_peak_rss", result.maxrss / MB, "MB"), Figure("growth_runner_wall", result.wall, "s")]


def measure(args: argparse.Namespace, work: Path, figures: list[Figure], pids: dict[str, int]) -> None:
    specs = {"full": DatasetSpec(1, args.sessions, args.turns, args.images, args.questions, args.size, args.noise)}
    if not args.skip_growth:
        specs["growth"] = DatasetSpec(args.growth_users, args.growth_sessions, args.turns, args.images,
                                      args.questions, args.size, args.noise)
    datasets = {}
    for phase, spec in specs.items():
        datasets[phase], seconds = ensure_dataset(spec, args.cache)
        figures.append(Figure(f"phase_generate_{phase}", seconds, "s"))
    with ExitStack() as stack:
        services, started = Services(work, stack, pids), time.monotonic()
        services.start()
        figures.append(Figure("phase_start_services", time.monotonic() - started, "s"))
        result = services.run_runner("runner_full", datasets["full"], work / "out-full")
        figures += full_figures(result)
        figures.append(Figure("prefect_server_peak_rss_after_full", services.peak_mb("prefect_server"), "MB"))
        started = time.monotonic()
        latencies = search_latencies(result.users()[0][1].workspace)
        figures += [Figure("search_p50", percentile(latencies, 50) * 1000, "ms"),
                    Figure("search_p95", percentile(latencies, 95) * 1000, "ms", TARGETS["search_p95"]),
                    Figure("phase_search", time.monotonic() - started, "s")]
        if "growth" in datasets:
            figures += growth_figures(services.run_runner("runner_growth", datasets["growth"], work / "out-growth",
                                                          "--user-concurrency", "1"))
        figures += [Figure("prefect_server_peak_rss", services.peak_mb("prefect_server"), "MB"),
                    Figure("simulator_peak_rss", services.peak_mb("simulator"), "MB")]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python bench/fullsize.py", description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--sessions", type=int, default=200, help="sessions of the full-size user (default 200)")
    add("--turns", type=int, default=48, help="turns per session (default 48)")
    add("--images", type=int, default=6, help="image turns per session (default 6)")
    add("--size", type=int, default=2048, help="image width and height in pixels (default 2048)")
    add("--noise", type=int, default=24, help="per-image noise amplitude (default 24)")
    add("--questions", type=int, default=20, help="visual questions per user (default 20)")
    add("--growth-users", type=int, default=4, help="users of the growth phase (default 4)")
    add("--growth-sessions", type=int, default=25, help="sessions per growth user (default 25)")
    add("--skip-growth", action="store_true", help="skip the growth phase")
    add("--cache", type=Path, default=ROOT / "bench" / ".cache", help="dataset cache (default bench/.cache)")
    add("--keep", action="store_true", help="keep the work directory (run directories, logs, RSS samples)")
    add("--json", type=Path, help="also write the figures to this JSON file")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mobilemem-fullsize-"))
    figures: list[Figure] = []
    pids: dict[str, int] = {}
    failure = None
    try:
        measure(args, work, figures, pids)
    except Exception as exc:  # print what was measured, then the failure
        failure = f"{type(exc).__name__}: {exc}"
    except KeyboardInterrupt:
        failure = "interrupted"
    if args.keep or failure:
        print(f"work directory kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'name':<36} {'value':>11} {'unit':<11} {'target':<8} status")
    print("\n".join(figure.line() for figure in figures))
    if args.json is not None:
        args.json.write_text(json.dumps({"figures": {f.name: f.as_json() for f in figures}, "pids": pids,
                                         "arguments": {k: str(v) for k, v in vars(args).items()},
                                         "error": failure}, indent=2) + "\n")
    if failure:
        print(f"fullsize: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
