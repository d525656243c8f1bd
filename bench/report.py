"""report.html at scale: how long `report RUN_DIR` takes, how large the page is, and whether
headless Chromium opens it offline without console errors, on a run of 1,000+ questions.

    python bench/report.py                      # 16 users x 32 sessions x 64 questions (1,024)
    python bench/report.py --run RUN_DIR        # an existing run directory instead

Without --run, the generated dataset (cached under bench/.cache/) is evaluated once with the
simulator (`--simulate`, embedded Prefect; a few minutes). The report is then rewritten
`--repeat` times by the real command in its own process (`python flows/mobilemem.py report`);
the wall time includes the interpreter's start and imports, as a user sees it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness import ROOT, Processes, cached_dataset

sys.path.insert(0, str(ROOT / "tests"))

TARGET_S = 10.0
TARGET_MB = 15.0
OFFLINE_SCHEMES = ("file:", "blob:", "data:")


def evaluate(processes: Processes, users: int, sessions: int, questions: int) -> Path:
    dataset = cached_dataset(ROOT / "bench" / ".cache", users=users, sessions=sessions, questions=questions)
    output = Path(tempfile.mkdtemp(prefix="report-bench-"))
    stats = processes.runner(["--dataset", str(dataset), "--output", str(output), "--simulate"],
                             {"PREFECT_HOME": str(processes.home / "prefect")})
    if stats.exit_code != 0:
        raise SystemExit(f"the run exited {stats.exit_code}: {(processes.home / 'runner.err').read_text()[-2000:]}")
    print(f"evaluated {dataset.name} in {stats.wall_s:.0f} s")
    return output / "mobilemem" / "qwen3.8-max"


def in_browser(report: Path) -> dict:
    from browser import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        return {"browser": f"skipped: {CHROMIUM} is missing"}
    problems, foreign = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on("request", lambda r: None if r.url.startswith(OFFLINE_SCHEMES) else foreign.append(r.url))
        started = time.perf_counter()
        page.goto(report.as_uri())
        page.wait_for_selector("#questions table.dataTable tbody tr", timeout=120_000)
        ready = time.perf_counter() - started
        info = page.locator("#questions .dt-info").inner_text()
        scored = page.locator("#scored").inner_text()
        browser.close()
    return {"table_ready_s": round(ready, 2), "console_errors": problems, "network_requests": foreign,
            "table_info": info, "rendered_scored": scored}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help="an existing run directory (default: evaluate a generated set)")
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--questions", type=int, default=64, help="visual questions per user")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    processes = Processes()
    try:
        run = args.run or evaluate(processes, args.users, args.sessions, args.questions)
        walls = []
        for _ in range(args.repeat):
            stats = processes.runner(["report", str(run)], {"PREFECT_HOME": str(processes.home / "prefect")})
            if stats.exit_code != 0:
                raise SystemExit(f"report exited {stats.exit_code}: {(processes.home / 'runner.err').read_text()}")
            walls.append(stats.wall_s)
    finally:
        processes.close()
    report = run / "report.html"
    summary = json.loads((run / "summary.json").read_text())
    figures = {"run": str(run), "questions": summary["expected"], "scored": summary["scored"],
               "report_wall_s": [round(w, 2) for w in walls], "report_wall_median_s": round(statistics.median(walls), 2),
               "report_mb": round(report.stat().st_size / 1e6, 2), **in_browser(report)}
    figures["numbers_match"] = figures.get("rendered_scored") in (None, str(summary["scored"]))
    figures["within_targets"] = (figures["report_wall_median_s"] < TARGET_S and figures["report_mb"] < TARGET_MB
                                 and not figures.get("console_errors") and not figures.get("network_requests"))
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if figures["within_targets"] and figures["numbers_match"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
