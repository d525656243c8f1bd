"""Candidate plug-ins end to end (DESIGN §10, issue 26).

- `examples/long-context` installed with pip into a fresh virtual environment (its dependencies are
  this environment's, reached through a `.pth` file, so that only the plug-in's own install is new)
  and run with `--candidate long-context` on the sample through the simulator: its records, its
  prompt (the official template verbatim, the newest history in order, images in order, the cut
  recorded), and `compare` against the ReMe Image run, from this environment, where the plug-in is not
  needed to read its run.
- A probe plug-in, installed for the test as a distribution: everything the runner hands it is a
  candidate view, with no reference answer, evidence or question type in it.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import MARKER, ROOT
from e2e.runs import API_KEY, run_cli, summary, validate_run_files
from cli import main
from mobilemem.dataset import CandidateQuestion, CandidateSession, load_dataset
from mobilemem.records import AnswerResponseFile, CompareFile, ReuseFile, RunFile
from mobilemem.rundir import RunDir, read_record
from mobilemem.simulator.usage_rules import content_parts
from plugin_dists import install
from report_page import element_text

pytestmark = pytest.mark.slow

TEMPLATE = (ROOT / "plugins/mobilemem/src/mobilemem/prompts/qa_multimodal_memory.txt").read_text(encoding="utf-8")
# small enough that the sample's history (32 turns, 8 images a user) is cut
CUT_CONFIG = "candidate:\n  context_size: 12000\n  max_tokens: 2048\n"


@pytest.fixture(scope="module")
def fresh_python(tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("plugin-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    outer = sysconfig.get_paths()["purelib"]
    Path(site, "outer-environment.pth").write_text(f"import site; site.addsitedir({outer!r})\n", encoding="utf-8")
    source = tmp_path_factory.mktemp("plugin-source") / "long-context"
    shutil.copytree(ROOT / "examples" / "long-context", source, ignore=shutil.ignore_patterns("*.egg-info"))
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "-e", str(source)],
                   check=True, capture_output=True, timeout=600)
    return python


def _run(python: Path, simulator, dataset: Path, out: Path, config: str, *extra: str):
    """(exit code, stderr, RunDir, the simulator's requests) of a long-context run in the fresh environment."""
    (out / "config.yaml").write_text(config, encoding="utf-8")
    simulator.reset()
    env = {**os.environ, "LLM_API_KEY": API_KEY, "LLM_BASE_URL": simulator.base_url}
    done = subprocess.run([python, "flows/mobilemem.py", "--dataset", str(dataset), "--output", str(out),
                           "--candidate", "long-context", "--config", str(out / "config.yaml"), *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    requests = simulator.requests
    simulator.reset()
    return done.returncode, done.stderr, RunDir.for_output(out, "qwen3.8-max", "long-context"), requests


@pytest.fixture(scope="module")
def long_context(fresh_python, sample_root, simulator, tmp_path_factory):
    return _run(fresh_python, simulator, sample_root, tmp_path_factory.mktemp("long-context"), CUT_CONFIG)


def test_the_plug_in_is_found_in_the_fresh_environment(fresh_python):
    listed = subprocess.run([fresh_python, "-c", "from mobilemem import candidates; print(candidates.installed())"],
                            capture_output=True, text=True, check=True).stdout
    assert "long-context" in listed and "reme-image" in listed


def test_its_run_keeps_the_contract_and_records_the_plug_in(long_context):
    code, stderr, run, requests = long_context
    assert code == 0, stderr
    manifest = read_record(run.run, RunFile)
    assert manifest.config.candidate.kind == manifest.candidate.kind == "long-context"
    assert manifest.candidate.plugin_package == "mobilemem-long-context==0.1.0"
    assert manifest.candidate.entry_point == "mobilemem_long_context:PLUGIN"
    assert list(manifest.prompt_sha256) == ["prompts/qa_multimodal_memory.txt"]
    assert validate_run_files(run) > 0
    assert {r.role for r in requests} == {"qa", "judge"}  # no ingest request
    assert len([r for r in requests if r.role == "qa"]) == len(manifest.questions) == 9
    assert not [r.id for r in requests if r.role == "qa" and MARKER in json.dumps(r.body, ensure_ascii=False)]
    assert not [p for p in run.root.rglob("*") if p.is_file() and API_KEY.encode() in p.read_bytes()]
    done = summary(run)
    assert done.expected == done.scored == 9 and done.usage.answer.requests == 9 and done.usage.memory.requests == 0


def _expected_prompt(session_turns: list, question: str) -> tuple[str, list[str]]:
    """The template's text before `[Images]` as the plug-in documents it, and the Image IDs in order."""
    memories, images, times = [], [], []
    for session, turns in session_turns:
        lines = [f"[{t.role} @ {session.event_start_time}] " + (f"Image ID: {t.image.image_id}" if t.image else t.text)
                 for t in turns]
        memories.append(f"Session {session.session_id} ({session.event_start_time}):\n" + "\n".join(lines))
        images += [t.image.image_id for t in turns if t.image]
        times += [session.event_start_time for t in turns if t.image]
    text = TEMPLATE.replace("[Question]", question).replace("[Retrieved Memories]", "\n".join(memories))
    return text.replace("[Timestamps]", "\n".join(times)).partition("[Images]")[0], images


def test_its_prompt_is_the_template_with_the_newest_history_and_the_cut_recorded(long_context, sample_root):
    _, _, run, requests = long_context
    dataset = load_dataset(sample_root)
    for user in dataset.users:
        history = [(s, t) for s in user.sessions for t in s.turns]
        for question in user.questions:
            response = read_record(run.user(user.user_id).question(question.question_id).answer_response,
                                   AnswerResponseFile).response
            window = response.details
            assert window["cut_by"] == "context" and 0 < window["turns_sent"] < window["turns"] == len(history)
            kept = history[len(history) - window["turns_sent"]:]  # the newest turns, in order
            assert window["first_sent"] == {"session_id": kept[0][0].session_id, "turn": kept[0][1].turn}
            assert window["estimated_tokens"] <= 12000 - 2048
            by_session = [(s, [t for other, t in kept if other is s]) for s in user.sessions]
            expected_text, expected_images = _expected_prompt([(s, ts) for s, ts in by_session if ts], question.question)
            [request] = [r for r in requests if r.role == "qa" and f"Question:\n{question.question}\n" in
                         content_parts(r.body["messages"][0]["content"])[0].get("text", "")]
            parts = content_parts(request.body["messages"][0]["content"])
            assert parts[0] == {"type": "text", "text": expected_text}
            assert parts[-1]["text"] == TEMPLATE.partition("[Images]")[2]
            labels = [parts[i - 1]["text"] for i, p in enumerate(parts) if p["type"] == "image_url"]
            assert labels == [f"Image ID: {image}" for image in expected_images]
            assert len(labels) == window["images_sent"] < window["images"] == sum(t.image is not None for _, t in history)
            assert response.retrieval.images_left_out == window["images"] - window["images_sent"]


def test_compare_sets_it_against_the_reme_image_run(long_context, baseline_run, tmp_path, capsys):
    _, _, run, _ = long_context
    _, default, _, _ = baseline_run
    assert main(["compare", str(default.root), str(run.root), "--out", str(tmp_path)]) == 0
    [written] = tmp_path.glob("compare-*.json")
    assert read_record(written, CompareFile).overall.compared == 9
    assert main(["report", str(run.root)]) == 0  # read back here, where the plug-in is not installed
    html = (run.root / "report.html").read_text(encoding="utf-8")
    assert element_text(html, "candidate-name") == element_text(html, "candidate-kind") == "long-context"
    assert element_text(html, "plugin-package") == "mobilemem-long-context==0.1.0"
    assert "ReMe" not in element_text(html, "run-header")


def test_a_reused_memory_answers_from_its_workspace(long_context, fresh_python, sample_root, simulator, tmp_path):
    """Another answer cap keeps the memory and changes every answer: the copied workspace's history
    (workspace/long-context/history.jsonl) is what the new answers are made from."""
    _, _, first, _ = long_context
    code, stderr, second, requests = _run(fresh_python, simulator, sample_root, tmp_path,
                                          CUT_CONFIG + "  max_answer_bytes: 60000\n", "--reuse", str(first.root))
    assert code == 0, stderr
    assert len([r for r in requests if r.role == "qa"]) == 9 and summary(second).scored == 9
    for user_id in read_record(second.run, RunFile).users:
        assert read_record(second.user(user_id).reuse, ReuseFile).memory is not None
    for planned in read_record(first.run, RunFile).questions:
        details = [read_record(run.user(planned.user_id).question(planned.question_id).answer_response,
                               AnswerResponseFile).response.details for run in (first, second)]
        assert details[0] == details[1] and details[0]["turns_sent"] > 0


PROBE = '''
from mobilemem.candidate import CandidatePlugin, IndexResponse, IngestResponse
from mobilemem.candidate_tools import ask
from agentscope.message import TextBlock

RECEIVED = []


class Probe:
    kind = "probe"

    def __init__(self, opening):
        RECEIVED.append(("open", opening))
        self.opening = opening

    async def ingest_session(self, session, timeout_s):
        RECEIVED.append(("session", session))
        return IngestResponse(success=True, answer="probe: kept nothing")

    async def build_index(self):
        return IndexResponse(documents=0, chunks=0, build_seconds=0.0)

    async def answer_question(self, job):
        RECEIVED.append(("question", job))
        return await ask(self.opening.model, [TextBlock(text="Question:\\n" + job.question)], self.opening.preset)

    async def close(self):
        return None


async def _open(opening):
    return Probe(opening)


PLUGIN = CandidatePlugin(open=_open)
'''


def test_a_plug_in_is_handed_candidate_views_only(monkeypatch, tmp_path, sample_root, simulator):
    install(monkeypatch, tmp_path / "dist", "mobilemem-probe", {"probe_candidate": PROBE}, {"probe": "probe_candidate:PLUGIN"})
    simulator.reset()
    code, run = run_cli(monkeypatch, simulator, sample_root, tmp_path / "out", candidate="probe")
    simulator.reset()
    assert code == 0 and summary(run).scored == 9
    received = sys.modules["probe_candidate"].RECEIVED
    kinds = [kind for kind, _ in received]
    assert kinds.count("open") == 3 and kinds.count("question") == 9 and kinds.count("session") == 12
    assert all(type(v) is CandidateSession for k, v in received if k == "session")
    assert all(type(v) is CandidateQuestion for k, v in received if k == "question")
    for kind, value in received:
        shown = repr(value) if kind == "open" else value.model_dump_json()
        assert MARKER not in shown
        assert not re.search(r"\b(evidence|question_type|golden|gold)\b", shown)
    assert set(CandidateQuestion.model_fields) == {"user_id", "question_id", "question"}
