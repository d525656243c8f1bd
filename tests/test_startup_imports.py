"""The commands that never run a flow start without Prefect, ReMe, AgentScope or the openai client
(issue 24): each runs in its own interpreter through the real entry point (`python -X importtime
flows/mobilemem.py ...`), and the modules it imported are read back from the interpreter's import log.
Each case also checks its exit status and its own line, so a refusal is the refusal it means to be."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

V1 = Path(__file__).parent / "data" / "records" / "v1"
HEAVY = ("prefect", "reme", "agentscope", "openai")
CREDENTIALS = ("LLM_API_KEY", "LLM_BASE_URL", "JUDGE_API_KEY", "JUDGE_BASE_URL", "JUDGE_MODEL_NAME")
# id: (arguments, with {sample}, {run}, {other}, {moved} and {tmp} filled in; exit status; text of its own output)
CASES = {
    "help": (["--help"], 0, "--dataset"),
    **{f"{command}-h": ([command, "-h"], 0, "usage:") for command in ("summarize", "plan", "rejudge", "report",
                                                                       "compare")},
    "summarize": (["summarize", "{run}"], 0, "scored"),
    "report": (["report", "{run}"], 0, "report:"),
    "compare": (["compare", "{other}", "{run}", "--out", "{tmp}"], 0, "compare:"),
    "plan": (["plan", "--dataset", "{sample}", "--simulate"], 0, "preflight passed"),
    "bad-argument": (["--dataset", "{sample}", "--users", "a"], 1, "argument --users"),
    "missing-dataset": (["--dataset", "{tmp}/nothing", "--output", "{tmp}/out", "--simulate"], 1,
                        "refused to start"),
    "bad-config": (["--dataset", "{sample}", "--output", "{tmp}/out", "--config", "{tmp}/bad.yaml", "--simulate"], 1,
                   "candidate.max_iter: unknown key"),
    "bad-reuse": (["--dataset", "{sample}", "--output", "{tmp}/out", "--reuse", "{tmp}", "--simulate"], 1,
                  "refused to start: --reuse"),
    "output-taken": (["--dataset", "{sample}", "--output", "{tmp}/taken", "--simulate"], 1, "already exists"),
    "no-credentials": (["--dataset", "{sample}", "--output", "{tmp}/out"], 1, "no API key"),
    "rejudge-not-a-run": (["rejudge", "{tmp}", "--output", "{tmp}/out"], 1, "refused to start: rejudge"),
    "rejudge-dataset-gone": (["rejudge", "{moved}", "--output", "{tmp}/out"], 1, "refused to start"),
    "summarize-not-a-run": (["summarize", "{tmp}"], 1, "is not a run directory"),
    "plan-refused": (["plan", "--dataset", "{tmp}/nothing"], 1, "refused to plan"),
}


@pytest.fixture
def places(sample_root, tmp_path) -> dict[str, str]:
    for name in ("run", "other", "moved"):
        shutil.copytree(V1, tmp_path / name)
    plan = json.loads((tmp_path / "moved" / "run.json").read_text())  # its dataset is no longer there
    (tmp_path / "moved" / "run.json").write_text(json.dumps({**plan, "dataset_path": str(tmp_path / "nothing")}))
    (tmp_path / "tmp" / "taken" / "mobilemem" / "qwen3.8-max").mkdir(parents=True)
    (tmp_path / "tmp" / "bad.yaml").write_text("candidate:\n  max_iter: 3\n")
    return {"sample": str(sample_root), "run": str(tmp_path / "run"), "other": str(tmp_path / "other"),
            "moved": str(tmp_path / "moved"), "tmp": str(tmp_path / "tmp")}


def _command(args: list[str]) -> tuple[subprocess.CompletedProcess, set[str], str]:
    """The command's result, the names of the modules it imported, and its own stderr."""
    env = {name: value for name, value in os.environ.items() if name not in CREDENTIALS}
    result = subprocess.run([sys.executable, "-X", "importtime", "flows/mobilemem.py", *args], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    lines = result.stderr.splitlines()
    imported = {line.rpartition("|")[2].strip() for line in lines if line.startswith("import time:")}
    return result, imported, "\n".join(line for line in lines if not line.startswith("import time:"))


@pytest.mark.parametrize("case", CASES)
def test_a_command_that_runs_no_flow_imports_no_flow_machinery(places, case):
    template, status, said = CASES[case]
    result, imported, stderr = _command([part.format(**places) for part in template])
    assert result.returncode == status, stderr
    assert said in result.stdout + stderr and "Traceback" not in stderr
    assert "mobilemem.records" in imported  # the log is read right: the command's own modules are in it
    assert sorted(name for name in imported if name.split(".")[0] in HEAVY) == []
