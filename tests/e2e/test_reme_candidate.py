"""The candidate of the fault-free sample run is ReMe's: its prompts, its tool schemas, its workspace,
an image block for `read_image`, no wall-clock time, no embedding request, no log on the console and
no file outside the run directory."""

import json
import os
import subprocess
import sys
from pathlib import Path

import frontmatter
import pytest
from reme.components.prompt_handler import PromptHandler
from reme.plugin import resolve_plugin_runtime
from reme.steps.evolve.auto_memory import AutoMemoryStep

from conftest import ROOT
from mobilemem.config import load_config
from mobilemem.records import AnswerResponseFile, SessionFile
from mobilemem.reme import app as reme_app
from mobilemem.rundir import read_record

pytestmark = pytest.mark.slow


def _system(request) -> str:
    [system] = [m for m in request.body["messages"] if m["role"] == "system"]
    return system["content"] if isinstance(system["content"], str) else system["content"][0]["text"]


def _jobs(tmp_path: Path) -> dict:
    """The jobs of a user's ReMe application as ReMe resolves them (preset + plugin)."""
    config = reme_app.app_config(tmp_path / "workspace", load_config().candidate)
    return resolve_plugin_runtime(config).config["jobs"]


def test_the_ingest_prompt_is_remes_own_auto_memory_prompt(baseline_run):
    _, _, requests, _ = baseline_run
    ingest = [r for r in requests if r.role == "ingest"]
    remes = PromptHandler(language="").load_prompt_by_class(AutoMemoryStep).prompt_format("system_prompt")
    assert len(ingest) == 2 * 12  # one daily_write round and one final text per session
    assert {_system(r) for r in ingest} == {remes}
    firsts = [r.body["messages"][1]["content"][0]["text"] for r in ingest]
    [first] = {text for text in firsts if "Session ID: 0_1\n" in text}  # the round and its final call
    assert "Image source: [[session/images/0_1/" in first


def test_tool_schemas_are_remes_job_schemas(baseline_run, tmp_path):
    _, _, requests, _ = baseline_run
    jobs = _jobs(tmp_path)

    def offered(request) -> dict:
        return {t["function"]["name"]: t["function"]["parameters"] for t in request.body["tools"]}

    for request in requests:
        if request.role == "ingest" and not request.final:
            assert offered(request) == {"daily_write": jobs["daily_write"]["parameters"]}
        if request.role == "answer" and not request.final:
            assert offered(request) == {name: jobs[name]["parameters"] for name in ("bm25_search", "read", "read_image")}


def test_read_image_reaches_the_model_as_an_image_block_not_base64_text(baseline_run):
    _, run, requests, _ = baseline_run
    looked = 0
    for request in (r for r in requests if r.role == "answer"):
        messages = request.body["messages"]
        names = {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls") or []}
        for n, message in enumerate(messages):
            if message["role"] != "tool" or names.get(message.get("tool_call_id")) != "read_image":
                continue
            text = json.dumps(message["content"])
            assert len(text) < 2_000 and "base64" not in text  # the payload is not text
            follow = json.dumps(messages[n + 1:n + 3])
            if '"image_url"' in follow and "data:image/" in follow:
                looked += 1
    assert looked >= 9  # every question looked at its image
    for qid in ("0_q_1", "1_q_1", "2_q_1"):
        response = read_record(run.user(int(qid[0])).question(qid).answer_response, AnswerResponseFile).response
        assert [(c.name, c.ok) for c in response.tool_calls] == [("bm25_search", True), ("read_image", True)]
        assert (run.user(int(qid[0])).workspace / response.trajectory_path).is_file()


def test_no_wall_clock_time_no_embedding_request_no_retry(baseline_run):
    _, _, requests, routes = baseline_run
    candidate = [r for r in requests if r.role != "judge"]
    assert not [r.id for r in candidate if "<current-time>" in json.dumps(r.body)]
    assert routes and all(route == "POST /v1/chat/completions" for route in routes)
    assert len(routes) == len(requests)


def test_the_workspace_is_remes_layout(baseline_run):
    _, run, _, _ = baseline_run
    workspace = run.user(0).workspace
    session = read_record(run.user(0).sessions / "0_1.json", SessionFile)
    [note] = session.notes_written
    post = frontmatter.loads((workspace / note).read_text(encoding="utf-8"))
    assert note.startswith("daily/2024-03-17/") and post["session_id"] == "0_1"
    assert post["source_conversation"] == "[[session/dialog/0_1.jsonl]]"
    assert post["source_images"] and all(s.startswith("[[session/images/0_1/") for s in post["source_images"])
    assert (workspace / "daily" / "2024-03-17.md").is_file()  # ReMe's day index
    dialog = (workspace / "session" / "dialog" / "0_1.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(dialog[0])["id"] == "0_1-t1" and "Image ID: image/uid0/" in "".join(dialog)
    assert (workspace / "metadata" / "keyword_index").is_dir()
    assert list((workspace / "mem_session" / "agentscope").glob("*.jsonl"))


def test_reme_logs_into_run_log_and_writes_nothing_outside_the_run_directory(sample_root, tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    env = {**os.environ, "HOME": str(home), "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)
    done = subprocess.run([sys.executable, str(ROOT / "flows" / "mobilemem.py"), "--dataset", str(sample_root),
                           "--output", "out", "--simulate", "--users", "2", "--limit-questions", "1"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "run directory: out/mobilemem/qwen3.8-max" and len(done.stdout.splitlines()) == 3
    assert done.stdout.splitlines()[2] == "report: out/mobilemem/qwen3.8-max/report.html"
    assert "reme." not in done.stdout + done.stderr and "| INFO |" not in done.stdout + done.stderr
    assert [p.name for p in cwd.iterdir()] == ["out"] and list(home.rglob("*")) == []
    assert "mobilemem.reme.log: reme.steps.evolve.auto_memory" in (cwd / "out/mobilemem/qwen3.8-max/run.log").read_text()
