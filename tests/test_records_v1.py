"""Version-1 run files (tests/data/records/v1, a faulty sample run from before the failure sub-record)
are read through the current readers, upgraded to this schema version; a newer version is refused."""

import json
import shutil

import pytest

from conftest import ROOT
from e2e.runs import LINES, RECORDS
from mobilemem import records
from mobilemem.failure_kinds import FailureKind
from mobilemem.records import ErrorFile, ErrorLine, JobFile, SessionFile, SummaryFile
from mobilemem.run_reader import DamagedFile, RunReader
from mobilemem.summary import summarize_run

V1 = ROOT / "tests" / "data" / "records" / "v1"


def _model(path):
    if path.parent.name == "sessions":
        return SessionFile
    return RECORDS.get(path.name) or LINES.get(path.name)


def _v1_files():
    return sorted(p for p in V1.rglob("*.json*") if "workspace" not in p.relative_to(V1).parts and _model(p))


def test_the_fixture_is_version_1():
    files = _v1_files()
    assert len(files) > 40
    for path in files:
        first = path.read_text().splitlines()[0] if path.suffix == ".jsonl" else path.read_text()
        assert json.loads(first)["schema_version"] == 1, path


@pytest.mark.parametrize("path", _v1_files(), ids=lambda p: str(p.relative_to(V1)))
def test_every_v1_file_reads_through_the_run_reader(path):
    reader = RunReader.open(V1)
    model = _model(path)
    found = list(reader.lines(path, model)) if path.suffix == ".jsonl" else [reader.maybe(path, model)]
    assert found and all(r is not None and r.schema_version == records.SCHEMA_VERSION for r in found)


def test_v1_failures_keep_their_categories_messages_and_lines():
    reader = RunReader.open(V1)
    lines = {line.id: line for line in reader.lines(V1 / "errors.jsonl", ErrorLine)}
    gap = reader.maybe(V1 / "users/0/questions/0_q_2/error.json", ErrorFile)
    assert gap.reason == "HTTP 401" and gap.failure.kind is FailureKind.HTTP_STATUS and gap.failure.status == 401
    assert gap.failure.label == "HTTP 401" and "Incorrect API key" in gap.failure.message
    assert lines[gap.failure.error_id].failure.label == "HTTP 401"
    blocked = reader.maybe(V1 / "users/1/questions/1_q_1/error.json", ErrorFile)
    assert blocked.reason == "ingest failed: HTTP 500" and blocked.failure.label == "HTTP 500"
    index = reader.maybe(V1 / "users/2/questions/2_q_1/error.json", ErrorFile)
    assert index.failure.kind is FailureKind.EXCEPTION and index.failure.label == "OSError"
    session = reader.maybe(V1 / "users/1/sessions/1_2.json", SessionFile)
    assert session.failure.label == "HTTP 500" and session.failure.error_id in lines
    failed = [r for r in session.requests if not r.success]
    assert failed and failed[-1].failure.label == "HTTP 500" and failed[-1].failure.frames


def test_a_v1_run_summarizes_to_the_figures_it_was_written_with():
    written = RunReader.open(V1).maybe(V1 / "summary.json", SummaryFile)
    summary, _ = summarize_run(V1)
    assert summary.gaps == written.gaps
    assert (summary.scored, summary.expected, summary.overall) == (written.scored, written.expected, written.overall)
    assert written.usage.users is None and [u.user_id for u in summary.usage.users] == [0, 1, 2]
    assert written.usage.policy_version == 2 and summary.usage.policy_version == 3
    # the per-user cost is new; policy v3 changed the means only where a unit is reused or unknown (none here)
    assert summary.usage.model_copy(update={"users": None, "policy_version": 2}) == written.usage
    assert written.official is None and summary.official.overall.expected == written.expected  # a new figure


def test_a_newer_schema_version_is_refused_in_one_line(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(V1, run, ignore=shutil.ignore_patterns("workspace"))
    job = run / "users/0/questions/0_q_1/job.json"
    job.write_text(json.dumps({**json.loads(job.read_text()), "schema_version": records.SCHEMA_VERSION + 1}))
    with pytest.raises(DamagedFile) as refused:
        RunReader.open(run).maybe(job, JobFile)
    message = str(refused.value)
    assert "\n" not in message and f"schema version {records.SCHEMA_VERSION + 1} is newer" in message


@pytest.fixture
def v1_copy(tmp_path):
    run = tmp_path / "v1"
    shutil.copytree(V1, run)
    return run


def test_a_v1_run_is_summarized_reported_and_compared_with_the_same_figures(v1_copy, capsys):
    from cli import main

    before = json.loads((v1_copy / "summary.json").read_text())
    assert main(["summarize", str(v1_copy)]) == 0
    after = json.loads((v1_copy / "summary.json").read_text())
    assert after["schema_version"] == records.SCHEMA_VERSION
    assert [u["user_id"] for u in after["usage"].pop("users")] == [0, 1, 2]  # the per-user cost is new
    assert (after["usage"].pop("policy_version"), before["usage"].pop("policy_version")) == (3, 2)  # same means here
    assert {k: after[k] for k in ("gaps", "scored", "expected", "overall", "usage")} == \
        {k: before[k] for k in ("gaps", "scored", "expected", "overall", "usage")}
    assert main(["report", str(v1_copy)]) == 0
    page = (v1_copy / "report.html").read_text()
    assert '<table class="plain users">' in page
    assert "Incorrect API key provided: [redacted]" in page and "ingest failed: HTTP 500" in page
    other = v1_copy.parent / "v1-again"
    shutil.copytree(V1, other)
    assert main(["compare", str(other), str(v1_copy)]) == 0
    assert "mobilemem:" not in capsys.readouterr().err
