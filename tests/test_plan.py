"""`plan` (issue 14): the counts, the reuse lookups and the estimate it prints, computed again here
from the raw dataset files; it sends no request and writes nothing.

Every number is recomputed from `data.jsonl`, `questions.jsonl` and the extracted `image/` folder
with the rule the README states (CJK characters 1 token, other characters 1/4, rounded up per text;
ceil(w/28) x ceil(h/28) per image; 2,000 overhead, 3,000 retrieved, 200 assumed answer tokens)."""

import contextlib
import hashlib
import json
import math
import re
import socket
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

import pytest
from PIL import Image

import mobilemem_judge
from mobilemem import fingerprints
from mobilemem.config import load_config
from mobilemem.dataset import load_dataset
from mobilemem.models import Endpoint
from mobilemem.prompts import frozen_hashes
from mobilemem.records import (AnswerResponse, AnswerResponseFile, JobFile, JudgmentFile, MemoryUsageFile, MetricsFile,
                               RunFile, RunRequest, Usage)
from mobilemem.rundir import RunDir, write_record
from lifecycle import provenance, run_plan, run_setup
from cli.plan import main
from plugin_dists import install

NOW = datetime.now(UTC)
ROW = re.compile(r"^  (memory|answers|judge|  reused|all|reused|to send)\s+(-?[\d,]+) requests\s+(-?[\d,]+) "
                 r"prompt tokens")
COUNTS = re.compile(r"^(?:users \d+, |  user (\d+) \(\w+\): )sessions (\d+), images (\d+) \(([\d,]+) bytes\), "
                    r"questions (\d+)$")
ENV = ("LLM_API_KEY", "LLM_BASE_URL", "JUDGE_API_KEY", "JUDGE_BASE_URL", "JUDGE_MODEL_NAME")


@pytest.fixture(autouse=True)
def no_credentials(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def _tokens(text: str) -> int:
    """The stated rule, written out again: 1 per CJK (wide or full-width) character, the rest / 4."""
    cjk = sum(1 for ch in text if unicodedata.east_asian_width(ch) in ("W", "F"))
    return cjk + math.ceil((len(text) - cjk) / 4)


def _raw(root: Path) -> dict[int, dict]:
    """Per user, from the raw files: sessions, text tokens, image files, bytes and tokens, questions."""
    users = {}
    for line in (root / "data.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        turns = [t for s in record["sessions"] for t in s["dialogue"]]
        files = sorted(p for p in (root / "image" / f"uid{record['uuid']}").rglob("*") if p.is_file())
        assert len(files) == sum(t["content_type"] == "image" for t in turns)  # each file is sent once
        sizes = [Image.open(p).size for p in files]
        users[record["uuid"]] = {
            "sessions": len(record["sessions"]), "images": len(files), "bytes": sum(p.stat().st_size for p in files),
            "text": sum(_tokens(t["content"]) for t in turns if t["content_type"] == "text"),
            "image_tokens": sum(math.ceil(w / 28) * math.ceil(h / 28) for w, h in sizes), "questions": []}
    for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        visual = [q for q in record["questions"] if q["question_type"] == "visual_reasoning"]
        users[record["uuid"]]["questions"] = visual
    return users


def _plan(capsys, *args: str) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


def _rows(out: str) -> dict[str, tuple[int, int]]:
    rows, stage = {}, ""
    for line in out.splitlines():
        if match := ROW.match(line):
            label = match[1]
            stage = label if label in ("memory", "answers", "judge") else stage
            key = f"{stage} reused" if label == "  reused" else label
            rows[key] = (int(match[2].replace(",", "")), int(match[3].replace(",", "")))
    return rows


def _filled(root: Path, question_ids: list[str]) -> int:
    """Tokens of the judge prompt without the answer (the judge's own rubric filling)."""
    config = load_config()
    judge = load_dataset(root, max_session_images=config.candidate.max_images).judge_questions
    return sum(_tokens(mobilemem_judge.fill(config.judge.rubric, judge[q], "")) for q in question_ids)


def _snapshot(folder: Path) -> dict[str, tuple[int, str]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("selection", [[], ["--users", "0,2", "--limit-questions", "2"]])
def test_the_counts_printed_are_the_datasets(sample_root, capsys, selection):
    raw = _raw(sample_root)
    users = [0, 2] if selection else sorted(raw)
    limit = 2 if selection else None
    out = _plan(capsys, "--dataset", str(sample_root), *selection)
    counts = [COUNTS.match(line) for line in out.splitlines() if COUNTS.match(line)]
    total, per_user = counts[0], {int(m[1]): m for m in counts[1:]}
    assert f"users {len(users)}, " in total[0] and sorted(per_user) == users
    for match, ids in [(total, users), *((per_user[u], [u]) for u in users)]:
        assert int(match[2]) == sum(raw[u]["sessions"] for u in ids)
        assert int(match[3]) == sum(raw[u]["images"] for u in ids)
        assert int(match[4].replace(",", "")) == sum(raw[u]["bytes"] for u in ids)
        assert int(match[5]) == sum(len(raw[u]["questions"][:limit]) for u in ids)


@pytest.mark.parametrize("k,m", [(3, 6), (2, 5)])
def test_the_estimate_is_the_stated_formula(sample_root, capsys, k, m):
    raw = _raw(sample_root)
    flags = [] if (k, m) == (3, 6) else ["--iterations-per-session", str(k), "--iterations-per-question", str(m)]
    rows = _rows(_plan(capsys, "--dataset", str(sample_root), "--simulate", *flags))
    s = sum(u["sessions"] for u in raw.values())
    questions = [q for u in raw.values() for q in u["questions"]]
    text, images = sum(u["text"] for u in raw.values()), sum(u["image_tokens"] for u in raw.values())
    memory = (s * k, k * (s * 2_000 + text + images))
    asked = sum(_tokens(q["question"]) for q in questions)
    answers = (len(questions) * m, m * (len(questions) * (2_000 + 3_000) + asked))
    judge = (len(questions), len(questions) * 200 + _filled(sample_root, [q["question_id"] for q in questions]))
    total = tuple(map(sum, zip(memory, answers, judge)))
    assert (rows["memory"], rows["answers"], rows["judge"], rows["all"]) == (memory, answers, judge, total)
    assert total[0] == s * k + len(questions) * (m + 1)
    assert rows["reused"] == (0, 0) and rows["to send"] == total


READS_HISTORY = """
from mobilemem.candidate import CandidatePlugin

async def _open(opening):
    raise AssertionError("plan opens no candidate")

PLUGIN = CandidatePlugin(open=_open, requests_per_session=0, requests_per_question=1, answer_reads="history")
"""


@pytest.mark.parametrize("kind", ["no-memory", "bm25-rag", "whole-history"])
def test_the_answer_estimate_follows_what_the_plug_in_declares_an_answer_carries(sample_root, capsys, monkeypatch,
                                                                                  tmp_path, kind):
    """no-memory: the question alone; bm25-rag: 3,000 retrieved tokens; a plug-in declaring "history": each
    question's user's whole transcript (text + image tokens), cut at the preset's context_size."""
    install(monkeypatch, tmp_path / "dist", "mobilemem-whole-history", {"whole_history": READS_HISTORY},
            {"whole-history": "whole_history:PLUGIN"})
    raw = _raw(sample_root)
    rows = _rows(_plan(capsys, "--dataset", str(sample_root), "--simulate", "--candidate", kind))
    context = load_config().candidate.context_size
    history = {u: min(raw[u]["text"] + raw[u]["image_tokens"], context) for u in raw}
    assert 0 < min(history.values())
    carried = {"no-memory": 0, "bm25-rag": 3_000}
    answers = sum(2_000 + _tokens(q["question"]) + carried.get(kind, history[u])
                  for u in raw for q in raw[u]["questions"])
    assert rows["memory"] == (0, 0)
    assert rows["answers"] == (sum(len(u["questions"]) for u in raw.values()), answers)


def test_plan_writes_nothing_and_contacts_no_server(sample_root, tmp_path, capsys, monkeypatch):
    """The candidate and judge URLs point at a listening socket nobody accepts on: after the plan, no
    connection is waiting on it. The output root is not created; the dataset is byte-identical."""
    before = _snapshot(sample_root)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        monkeypatch.setenv("LLM_BASE_URL", f"http://127.0.0.1:{server.getsockname()[1]}/v1")
        monkeypatch.setenv("LLM_API_KEY", "plan-test-key")
        out = _plan(capsys, "--dataset", str(sample_root), "--output", str(tmp_path / "out"))
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.accept()
    assert f"run directory {tmp_path / 'out' / 'mobilemem' / 'qwen3.8-max'}: free" in out
    assert "would refuse" not in out
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == []
    assert _snapshot(sample_root) == before


def test_without_credentials_plan_still_reports_and_says_the_run_would_refuse(sample_root, capsys):
    out = _plan(capsys, "--dataset", str(sample_root))
    assert "note: without --simulate the run would refuse to start: no API key or base URL" in out
    assert _rows(out)["all"][0] == 12 * 3 + 9 * (6 + 1)


def test_refusals_are_one_line_and_exit_1(sample_copy, tmp_path, capsys):
    assert main(["--dataset", str(sample_copy), "--reuse", str(tmp_path / "no-run")]) == 1
    assert capsys.readouterr().err == (f"mobilemem: refused to plan: --reuse {tmp_path / 'no-run'}: "
                                       f"{tmp_path / 'no-run'} is not a run directory (no such folder)\n")
    with (sample_copy / "data.jsonl").open("a") as handle:
        handle.write("{not json\n")
    assert main(["--dataset", str(sample_copy)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mobilemem: refused to plan: the dataset cannot be evaluated") and "Traceback" not in err


@pytest.fixture
def earlier(sample_root, tmp_path) -> Path:
    """A simulated earlier run: user 0's complete memory (the fingerprint the runner computes), one
    answer of that memory with its judgment, one answer of another memory; user 1's memory of another
    fingerprint; user 2 nothing."""
    config = load_config()
    dataset = load_dataset(sample_root, max_session_images=config.candidate.max_images)
    run = RunDir(tmp_path / "earlier")
    manifest = RunFile(
        args=RunRequest(dataset=sample_root, output=tmp_path, simulate=True),
        config=config, package_versions={}, git_commit=None, git_dirty=None,
        dataset_path=str(dataset.root), dataset_revision=None, data_sha256=dataset.data_sha256,
        questions_sha256=dataset.questions_sha256, prompt_sha256=frozen_hashes(),
        candidate=provenance.candidate_provenance(config), started_at=NOW, finished_at=NOW, flow_run_id="earlier-flow-run",
        simulated=True, state="completed", users=[0, 1, 2])
    write_record(run.run, manifest)
    plan = run_plan.Plan(manifest.args, config, dataset, run, True, None, None, [])
    memory = run_setup._memory_fingerprints(plan, config.model, manifest)[0]
    write_record(run.user(0).memory_usage, MemoryUsageFile(user_id=0, sessions=4, usage=Usage(),
                                                           memory_fingerprint=memory, manifest=[]))
    write_record(run.user(1).memory_usage, MemoryUsageFile(user_id=1, sessions=4, usage=Usage(),
                                                           memory_fingerprint="0" * 64))
    first, second = dataset.users[0].questions[:2]
    settings = mobilemem_judge.judge_settings(config.judge, Endpoint.simulated("judge", config, "http://x"))
    for job, of_memory in ((first, memory), (second, "another memory")):
        write_record(run.user(0).question(job.question_id).job, JobFile(user_id=0, question_id=job.question_id,
                                                                        question=job.question))
        write_record(run.user(0).question(job.question_id).answer_response, AnswerResponseFile(
            started_at=NOW, finished_at=NOW, user_id=0, question_id=job.question_id,
            response=AnswerResponse(success=True, answer="red", finished_reason="completed"), usage=Usage(),
            requests=[], latency_s=0.1,
            answer_fingerprint=fingerprints.answer_fingerprint(of_memory, job, config.candidate)))
    write_record(run.user(0).question(first.question_id).judgment, JudgmentFile(
        started_at=NOW, finished_at=NOW, user_id=0, question_id=first.question_id, success=True, label="CORRECT",
        decided_by="json", raw_reply='{"label": "CORRECT"}', usage=Usage(), requests=[],
        judgment_fingerprint=mobilemem_judge.judgment_fingerprint(
            dataset.judge_questions[first.question_id], "red", settings)))
    write_record(run.user(0).question(first.question_id).metrics, MetricsFile(
        user_id=0, question_id=first.question_id, llm_judge=1, f1=1.0, bleu1=1.0, reference="red"))
    return run.root


def test_reuse_reports_what_would_be_copied_and_subtracts_it(sample_root, earlier, capsys, monkeypatch):
    before = _snapshot(earlier)
    out = _plan(capsys, "--dataset", str(sample_root), "--simulate", "--reuse", str(earlier))
    assert (f"  user 0: memory reused from {earlier} (run id earlier-flow-run), answers reused 1/3, "
            "judgments reused 1/3") in out
    assert "  user 1: memory built in this run" in out and "  user 2: memory built in this run" in out
    raw, rows = _raw(sample_root), _rows(out)
    first = raw[0]["questions"][0]
    memory = (4 * 3, 3 * (4 * 2_000 + raw[0]["text"] + raw[0]["image_tokens"]))
    answer = (6, 6 * (2_000 + 3_000 + _tokens(first["question"])))
    judgment = (1, 200 + _filled(sample_root, [first["question_id"]]))
    reused = tuple(map(sum, zip(memory, answer, judgment)))
    negative = lambda cost: (-cost[0], -cost[1])  # noqa: E731 (reused rows are printed as subtractions)
    assert (rows["memory reused"], rows["answers reused"], rows["judge reused"], rows["reused"]) == (
        negative(memory), negative(answer), negative(judgment), negative(reused))
    assert rows["to send"] == (rows["all"][0] - reused[0], rows["all"][1] - reused[1])
    # a real-model run has another memory fingerprint than the simulated earlier run: nothing to reuse
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LLM_API_KEY", "plan-test-key")
    out = _plan(capsys, "--dataset", str(sample_root), "--reuse", str(earlier))
    assert "memory reused" not in out and _rows(out)["reused"] == (0, 0)
    assert _snapshot(earlier) == before


MONEY = re.compile(r"^  (candidate|judge|total)\s+([\d,]+) requests\s+([\d,]+) input \+\s+([\d,]+) output tokens "
                   r"=\s+([\d,.]+)$")


def _money(out: str) -> dict[str, tuple[int, int, int, str]]:
    return {m[1]: (int(m[2].replace(",", "")), int(m[3].replace(",", "")), int(m[4].replace(",", "")), m[5])
            for line in out.splitlines() if (m := MONEY.match(line))}


def test_with_prices_plan_prints_the_cost_of_what_it_would_send(sample_root, capsys):
    """The sample sends 90 candidate requests of 355,443 prompt tokens (36 + 54; 84,003 + 271,440) and 9
    judge requests of 3,953: at 2 per million input and 8 per million output tokens, with 1,000 output
    tokens per candidate request and 20 per judgment, 0.710886 + 0.72 and 0.007906 + 0.00144."""
    out = _plan(capsys, "--dataset", str(sample_root), "--simulate", "--price-input", "2", "--price-output", "8")
    assert _money(out) == {"candidate": (90, 355_443, 90_000, "1.4309"), "judge": (9, 3_953, 180, "0.0093"),
                           "total": (99, 359_396, 90_180, "1.4402")}
    assert ("  output tokens assumed per request: 1,000 per candidate request (reasoning included; --output-tokens), "
            "20 per judge request (--judge-output-tokens):") in out
    assert "candidate input 2, output 8; judge input 2, output 8 (any one currency, no cache discount)" in out


def test_configured_prices_the_judges_apart_and_flags_over_them(sample_root, tmp_path, capsys):
    """Config prices 0.5 / 4 (the candidate; the flag's 1 wins for input) and 10 / 30 (the judge), 500 output
    tokens per candidate request and 10 per judgment: candidate 0.355443 + 0.18, judge 0.03953 + 0.0027."""
    config = tmp_path / "prices.yaml"
    config.write_text("prices:\n  input_per_mtok: 0.5\n  output_per_mtok: 4\n  judge_input_per_mtok: 10\n"
                      "  judge_output_per_mtok: 30\n")
    out = _plan(capsys, "--dataset", str(sample_root), "--simulate", "--config", str(config), "--price-input", "1",
                "--output-tokens", "500", "--judge-output-tokens", "10")
    assert _money(out) == {"candidate": (90, 355_443, 45_000, "0.5354"), "judge": (9, 3_953, 90, "0.0422"),
                           "total": (99, 359_396, 45_090, "0.5777")}


def test_without_prices_nothing_about_money_is_printed(sample_root, capsys):
    out = _plan(capsys, "--dataset", str(sample_root), "--simulate", "--output-tokens", "5")
    assert _money(out) == {} and "cost" not in out and "output tokens" not in out


@pytest.mark.parametrize("flags,said", [
    (["--price-input", "2"], "--price-input and --price-output (config prices.input_per_mtok, "
                             "prices.output_per_mtok) go together: give both or neither"),
    (["--judge-price-input", "2", "--judge-price-output", "3"], "the judge's prices alone give no estimate"),
    (["--price-input", "-1", "--price-output", "3"], "argument --price-input: expected a price >= 0"),
])
def test_half_a_price_pair_is_refused_in_one_line(sample_root, capsys, flags, said):
    with pytest.raises(SystemExit) if "argument" in said else contextlib.nullcontext():
        assert main(["--dataset", str(sample_root), "--simulate", *flags]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err
