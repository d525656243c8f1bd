"""Helpers for end-to-end runs: the CLI in-process against the shared simulator, and file readers."""

import json
import subprocess
from pathlib import Path

from cli import main
from mobilemem import records
from mobilemem.records import DEFAULT_KIND, ErrorLine, SummaryFile
from mobilemem.rundir import RunDir, read_lines, read_record

API_KEY = "sk-PLANTED-e2e-0123456789abcdef"


def run_cli(monkeypatch, sim, dataset: Path, output: Path, *extra: str, base_url: str | None = None,
            candidate: str = DEFAULT_KIND) -> tuple[int, RunDir]:
    monkeypatch.setenv("LLM_API_KEY", API_KEY)
    monkeypatch.setenv("LLM_BASE_URL", base_url or sim.base_url)
    chosen = [] if candidate == DEFAULT_KIND else ["--candidate", candidate]
    code = main(["--dataset", str(dataset), "--output", str(output), *chosen, *extra])
    return code, RunDir.for_output(output, "qwen3.8-max", candidate)


def stop_process(process: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `grace_s`; reaped either way."""
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def summary(run: RunDir) -> SummaryFile:
    return read_record(run.summary, SummaryFile)


def errors(run: RunDir) -> list[ErrorLine]:
    return read_lines(run.errors, ErrorLine)


def load(path: Path) -> dict:
    return json.loads(path.read_text())


RECORDS = {"run.json": records.RunFile, "judge-settings.json": records.JudgeSettingsFile,
           "summary.json": records.SummaryFile, "job.json": records.JobFile,
           "answer-response.json": records.AnswerResponseFile, "judgment.json": records.JudgmentFile,
           "metrics.json": records.MetricsFile, "error.json": records.ErrorFile,
           "attribution.json": records.AttributionFile, "reuse.json": records.ReuseFile,
           "index-response.json": records.IndexResponseFile, "memory_usage.json": records.MemoryUsageFile}
LINES = {"errors.jsonl": records.ErrorLine, "cleanup-errors.jsonl": records.ErrorLine,
         "results.jsonl": records.ResultLine}


def validate_run_files(run: RunDir) -> int:
    """Every record of the run directory (the candidate's workspace aside) validates with its model
    and every other JSON file parses; returns how many files were checked."""
    checked = 0
    for path in run.root.rglob("*"):
        if "workspace" in path.relative_to(run.root).parts or not path.is_file():
            continue
        if path.parent.name == "sessions" and path.suffix == ".json":
            read_record(path, records.SessionFile)
        elif path.name in RECORDS:
            read_record(path, RECORDS[path.name])
        elif path.name in LINES:
            for line in path.read_bytes().splitlines():
                LINES[path.name].model_validate_json(line)
        elif path.suffix == ".json":
            json.loads(path.read_bytes())
        else:
            continue
        checked += 1
    return checked
