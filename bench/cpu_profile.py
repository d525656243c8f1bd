"""Where the runner's CPU goes (issue 24): one latency-0 run of the real runner under py-spy.

    pip install py-spy
    python bench/cpu_profile.py [--users 16 --sessions 8 --questions 20] [--raw profile.txt]

The runner (`flows/mobilemem.py`, its own process) runs against a simulator and a Prefect server in
other processes, as in bench/overhead.py, while py-spy samples the stack of the thread holding the GIL
(`--gil`: Python work on the CPU; py-spy's default "active threads" also counts threads waiting in
a queue or a selector). Native work with the GIL released (zlib, fsync, image decoding in Pillow's
C code) is not sampled: the process's CPU seconds are the whole figure. Each sample is charged to its *owner*: the innermost frame that is not the standard
library, named by its package (`runner` = this repository's code). The report prints the share of
each owner (a sample inside an import is charged to `import`), the top owner functions, and the
runner's own functions inclusive of what they call, so
what is the runner's and what is ReMe's (or Prefect's, or the HTTP client's) is told apart.
"""

from __future__ import annotations

import argparse
import re
import sys
import sysconfig
import tempfile
from collections import Counter
from pathlib import Path

from harness import ROOT, Processes, overhead_dataset, overhead_options

RUNNER_DIRS = ("flows/", "tasks/", "lifecycle/", "cli/", "plugins/mobilemem/src/", "plugins/mobilemem-judge/src/")
FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*):(?P<line>\d+)\)$")
STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()


def owner(file: str) -> str | None:
    """The package a frame's file belongs to: `runner`, a site-packages top-level name, or None
    for the standard library (and frames py-spy could not place)."""
    path = Path(file)
    if "site-packages" in path.parts:
        return path.parts[path.parts.index("site-packages") + 1].removesuffix(".py")
    resolved = path.resolve() if path.is_absolute() else (ROOT / path).resolve()
    if resolved.is_relative_to(ROOT) and any(str(resolved.relative_to(ROOT)).startswith(d) for d in RUNNER_DIRS):
        return "runner"
    return None


def parse(raw: Path) -> list[tuple[list[tuple[str, str]], int]]:
    """py-spy's raw (collapsed) format: `frame;frame;...;leaf count`, each frame `function (file:line)`."""
    samples = []
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = []
        for text in stack.split(";"):
            match = FRAME.match(text)
            if match:
                frames.append((match["function"], match["file"]))
        samples.append((frames, int(count)))
    return samples


def charge(samples) -> tuple[Counter, Counter, Counter, int]:
    """Samples per owner and per owner function (innermost non-stdlib frame), and per runner
    function inclusive (each runner function on the stack once per sample)."""
    owners, functions, inclusive, total = Counter(), Counter(), Counter(), 0
    for frames, count in samples:
        total += count
        placed = [(fn, file, owner(file)) for fn, file in frames]
        if any(fn == "_find_and_load" for fn, _ in frames):  # start-up, and any later lazy import
            owners["import"] += count
            continue
        inner = next(((fn, file, who) for fn, file, who in reversed(placed) if who), None)
        who = inner[2] if inner else "stdlib"
        owners[who] += count
        if inner:
            functions[f"{who}: {inner[0]} ({_short(inner[1])})"] += count
        for key in {f"{fn} ({_short(file)})" for fn, file, w in placed if w == "runner"}:
            inclusive[key] += count
    return owners, functions, inclusive, total


def _short(file: str) -> str:
    path = Path(file)
    if "site-packages" in path.parts:
        return "/".join(path.parts[path.parts.index("site-packages") + 1:])
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return file


def report(samples, top: int) -> str:
    owners, functions, inclusive, total = charge(samples)
    share = lambda n: f"{100 * n / total:5.1f} %"  # noqa: E731
    lines = [f"{total} samples of the thread holding the GIL", "", "by owner (innermost frame outside the standard library):"]
    lines += [f"  {share(n)}  {who}" for who, n in owners.most_common()]
    lines += ["", f"top {top} owner functions (self, stdlib callees included):"]
    lines += [f"  {share(n)}  {key}" for key, n in functions.most_common(top)]
    lines += ["", f"top {top} runner functions (inclusive of everything they call):"]
    lines += [f"  {share(n)}  {key}" for key, n in inclusive.most_common(top)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    overhead_options(parser)
    parser.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--raw", type=Path, help="keep py-spy's raw stacks here (default: a temporary file)")
    parser.add_argument("--read", type=Path, help="only report an earlier --raw file")
    args = parser.parse_args(argv)
    if args.read:
        print(report(parse(args.read), args.top))
        return 0
    dataset = overhead_dataset(args)
    processes = Processes()
    raw = args.raw or processes.home / "profile.txt"
    try:
        _, api = processes.prefect_server()
        _, url = processes.simulator(0.0, processes.home / "simulator.jsonl")
        spy = ("py-spy", "record", "--format", "raw", "--rate", str(args.rate), "--nonblocking", "--full-filenames", "--gil",
               "--output", str(raw), "--")
        stats = processes.runner(["--dataset", str(dataset), "--output", str(Path(tempfile.mkdtemp(dir=processes.home)))],
                                 {"LLM_API_KEY": "bench", "LLM_BASE_URL": url, "PREFECT_API_URL": api}, prefix=spy)
    finally:
        processes.close()
    if stats.exit_code != 0:
        raise SystemExit(f"the profiled runner exited with {stats.exit_code}; see {processes.home / 'runner.err'}")
    print(f"runner wall {stats.wall_s:.1f} s under py-spy; stacks in {raw}\n")
    print(report(parse(raw), args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
