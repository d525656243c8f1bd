"""Start-up of the commands that run no flow (issue 24): each one's wall time in its own interpreter,
as a user sees it (`python flows/mobilemem.py ...`: the interpreter's start, the imports, the work).

    python bench/startup.py [--repeat 5] [--run RUN_DIR]

Without --run, the committed schema-1 run directory (tests/data/records/v1: 3 users, 9 questions) is
copied into a temporary folder (summarize, report and compare write into it); `plan` and the
refusal run on the generated sample dataset, extracted there too. Per command: the median, min and
max over `--repeat` runs, then, from one more run under `python -X importtime`, the modules it
imported of Prefect, ReMe, AgentScope and openai (0 is the point), the seconds of all its imports,
of them those in the bodies of the application's own modules, and its costliest other packages
(every module's own time, summed per top-level package; the import log's own overhead included).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

from generate_sample import generate  # noqa: E402

V1 = ROOT / "tests" / "data" / "records" / "v1"
HEAVY = ("prefect", "reme", "agentscope", "openai")
OWN = ("mobilemem", "mobilemem_judge", "lifecycle", "cli", "flows", "tasks")
CREDENTIALS = ("LLM_API_KEY", "LLM_BASE_URL", "JUDGE_API_KEY", "JUDGE_BASE_URL", "JUDGE_MODEL_NAME")


def commands(where: Path) -> dict[str, list[str]]:
    run, other, sample = where / "run", where / "other", where / "MobileMem-Omni"
    return {"--help": ["--help"], "summarize RUN": ["summarize", str(run)], "report RUN": ["report", str(run)],
            "compare A B": ["compare", str(other), str(run), "--out", str(where)],
            "plan (sample)": ["plan", "--dataset", str(sample), "--simulate"],
            "refusal (no dataset)": ["--dataset", str(where / "nothing"), "--output", str(where / "out"),
                                     "--simulate"]}


def _run(args: list[str], *flags: str) -> subprocess.CompletedProcess:
    env = {name: value for name, value in os.environ.items() if name not in CREDENTIALS}
    return subprocess.run([sys.executable, *flags, "flows/mobilemem.py", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def wall_times(args: list[str], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        _run(args)
        times.append(time.perf_counter() - started)
    return times


def imports(args: list[str], top: int) -> tuple[int, float, float, list[tuple[str, float]]]:
    """From one run under `-X importtime`: how many modules of HEAVY the command imported, the seconds
    of all its imports, those spent in the bodies of the application's own modules (mostly pydantic
    building the record models), and its `top` costliest other packages (each one's modules' own
    time summed)."""
    heavy, per_package = 0, Counter()
    for line in _run(args, "-X", "importtime").stderr.splitlines():
        own, _, name = (part.strip() for part in line.removeprefix("import time:").split("|")) \
            if line.startswith("import time:") else ("", "", "")
        if own.isdigit():  # not the header line, nor the command's own output
            heavy += name.split(".")[0] in HEAVY
            per_package[name.split(".")[0]] += int(own) / 1e6
    own_s = sum(per_package.pop(package, 0.0) for package in OWN)
    return heavy, sum(per_package.values()) + own_s, own_s, per_package.most_common(top)


def prepare(where: Path) -> None:
    for name in ("run", "other"):
        shutil.copytree(V1, where / name)
    generate(where / "MobileMem-Omni", extract=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--run", type=Path, help="a run directory for summarize/report (copied; default: v1)")
    parser.add_argument("--top", type=int, default=4, help="costliest other packages shown per command")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as folder:
        where = Path(folder)
        prepare(where)
        if args.run is not None:
            shutil.rmtree(where / "run")
            shutil.copytree(args.run, where / "run")
        print(f"{'command':<22}{'median':>8}{'min':>8}{'max':>8}  heavy  imports  of them ours  "
              "costliest other packages (s)")
        for label, command in commands(where).items():
            times = wall_times(command, args.repeat)
            heavy, all_s, own_s, costly = imports(command, args.top)
            listed = ", ".join(f"{name} {seconds:.2f}" for name, seconds in costly)
            print(f"{label:<22}{statistics.median(times):>7.2f}s{min(times):>7.2f}s{max(times):>7.2f}s"
                  f"  {heavy:>5}  {all_s:>6.2f}s  {own_s:>10.2f}s  {listed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
