"""report.html (issue 15): written at the end of every run and by `report RUN_DIR`, a pure function
of the run's files whose numbers are summary.json's, whose detail view is each answer's own tool
calls, and which carries no secret."""

import json
import re
import shutil
from html.parser import HTMLParser

import pytest

from e2e.runs import API_KEY, summary
from cli import main
from mobilemem.records import AnswerResponseFile, JudgeSettingsFile, OfficialScore, ResultLine
from mobilemem.rundir import RunDir, read_lines, read_record
from mobilemem_judge.analysis import published
from report_page import element_text, marked_rows

pytestmark = pytest.mark.slow


class _Page(HTMLParser):
    """The score cells (`tr[data-group] td.<metric>`), the gap rows and the inlined JSON blobs."""

    def __init__(self) -> None:
        super().__init__()
        self.scores: dict[str, dict[str, str]] = {}
        self.blobs: dict[str, str] = {}
        self._group = self._cell = self._blob = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr" and "data-group" in attrs:
            self._group = attrs["data-group"]
            self.scores.setdefault(self._group, {})
        elif tag == "td" and self._group and (attrs.get("class") or "").split()[-1:] in (["accuracy"], ["f1"],
                                                                                         ["bleu1"]):
            self._cell = attrs["class"].split()[-1]
        elif tag == "script" and attrs.get("type") == "application/json":
            self._blob = attrs["id"]
            self.blobs[self._blob] = ""

    def handle_endtag(self, tag):
        if tag == "tr":
            self._group = None
        elif tag == "td":
            self._cell = None
        elif tag == "script":
            self._blob = None

    def handle_data(self, data):
        if self._cell:
            self.scores[self._group][self._cell] = data.strip()
        if self._blob:
            self.blobs[self._blob] += data


def _page(run: RunDir) -> _Page:
    page = _Page()
    page.feed((run.root / "report.html").read_text(encoding="utf-8"))
    return page


def _fmt(value):
    return "n/a" if value is None else f"{value:.4f}"


def test_the_report_shows_summary_json_numbers(baseline_run):
    _, run, _, _ = baseline_run
    done = summary(run)
    page = _page(run)
    expected = {"overall:all": done.overall}
    expected |= {f"language:{k}": v for k, v in done.by_language.items()}
    expected |= {f"difficulty:{k}": v for k, v in done.by_difficulty.items()}
    assert set(page.scores) == set(expected)
    for group, score in expected.items():
        assert page.scores[group] == {"accuracy": _fmt(score.accuracy), "f1": _fmt(score.f1),
                                      "bleu1": _fmt(score.bleu1)}, group


def test_the_header_names_reme_image_and_the_judge_and_the_official_accounting_is_summary_json_s(faulty_run):
    """Every stage failed once: 1 of 9 questions scored, the other 8 count as 0 in the secondary figure."""
    _, run, *_ = faulty_run
    html = (run.root / "report.html").read_text(encoding="utf-8")
    assert element_text(html, "candidate-name") == "ReMe Image" and element_text(html, "candidate-kind") == "reme-image"
    assert element_text(html, "judge-model") == read_record(run.judge_settings, JudgeSettingsFile).model
    done = summary(run)
    assert done.official.overall == OfficialScore(expected=9, scored=1, not_scored=8, accuracy=1 / 9,
                                                  f1=done.overall.f1 / 9, bleu1=done.overall.bleu1 / 9)
    expected = {"overall:all": done.official.overall}
    expected |= {f"language:{k}": v for k, v in done.official.by_language.items()}
    expected |= {f"difficulty:{k}": v for k, v in done.official.by_difficulty.items()}
    assert {key: cells[2:] for key, cells in marked_rows(html, "data-official").items()} == {
        key: [f"{o.scored} / {o.expected}", str(o.not_scored), _fmt(o.accuracy), _fmt(o.f1), _fmt(o.bleu1)]
        for key, o in expected.items()}
    assert list(marked_rows(html, "data-published")) == [f.system for f in published.FIGURES]


def test_the_evidence_breakdown_is_summary_json_s(baseline_run):
    _, run, _, _ = baseline_run
    evidence = summary(run).evidence
    assert evidence is not None and evidence.attributed == summary(run).scored
    html = (run.root / "report.html").read_text(encoding="utf-8")
    cells = re.findall(r'<tr data-cell="\d"><td>[^<]+</td><td class="num">(\d+)</td><td class="num">(\d+)</td>', html)
    assert [(int(q), int(c)) for q, c in cells] == [
        (cell.questions, cell.correct) for cell in (evidence.retrieval_miss, evidence.retrieved_not_opened,
                                                    evidence.opened_not_retrieved, evidence.retrieved_and_opened)]
    assert f'<b id="opened-wrong">{evidence.opened_answered_wrong}</b>' in html
    details = json.loads(_page(run).blobs["details-data"])
    assert all(d["attribution"]["opened_evidence_image"] for d in details if d["status"] == "scored")


def test_the_detail_view_is_each_answers_own_tool_calls_with_thumbnails(baseline_run):
    _, run, _, _ = baseline_run
    page = _page(run)
    details = json.loads(page.blobs["details-data"])
    thumbs = json.loads(page.blobs["thumbs-data"])
    results = read_lines(run.results, ResultLine)
    assert [(d["user_id"], d["question_id"]) for d in details] == [(r.user_id, r.question_id) for r in results]
    images = 0
    for detail in details:
        answer = read_record(run.user(detail["user_id"]).question(detail["question_id"]).answer_response,
                             AnswerResponseFile)
        calls = answer.response.tool_calls
        assert [(t["name"], t["arguments"]) for t in detail["tools"]] == [
            (c.name, json.dumps(c.arguments, ensure_ascii=False) if c.arguments else None) for c in calls]
        for tool in detail["tools"]:
            if tool["name"] == "read_image":
                images += 1
                assert thumbs["uris"][tool["image"]].startswith("data:image/jpeg;base64,")
        assert detail["prediction"] == answer.response.answer
    assert images >= len(details)  # the simulator's agent looks at a picture for every visual question
    assert thumbs["missing"] == {}


def test_gaps_are_reported_by_stage_and_no_secret_is_in_the_report(faulty_run):
    _, run, _, answer_q, judge_q = faulty_run
    html = (run.root / "report.html").read_text(encoding="utf-8")
    assert API_KEY not in html and API_KEY[:12] not in html
    done = summary(run)
    rows = re.findall(r"<tr><td>(\w+)</td><td>([^<]+)</td><td class=\"num\">(\d+)</td></tr>", html)
    assert {(stage, reason.strip(), int(n)) for stage, reason, n in rows} == {
        (stage, reason, n) for stage, reasons in done.gaps.items() for reason, n in reasons.items()}
    details = {d["question_id"]: d for d in json.loads(_page(run).blobs["details-data"])}
    assert details[answer_q.question_id]["gap"]["stage"] == "answer"
    assert details[judge_q.question_id]["gap"]["stage"] == "judge"
    assert details[judge_q.question_id]["prediction"]  # answered, then the judgment failed


def _user_rows(html: str) -> list[tuple[str, ...]]:
    table = html[html.index('<table class="plain users">'):]
    table = table[:table.index("</table>")]
    return [tuple(re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S))
            for row in re.findall(r"<tr>(<td.*?)</tr>", table, re.S)]


def test_the_per_user_cost_is_summary_json_s_never_recomputed(baseline_run, tmp_path):
    _, run, _, _ = baseline_run
    users = summary(run).usage.users
    assert users and all(u.memory_tokens and u.answer_tokens for u in users)
    assert _user_rows((run.root / "report.html").read_text(encoding="utf-8")) == [
        (str(u.user_id), str(u.sessions), f"{u.memory_tokens:,}", f"{u.answer_tokens:,}") for u in users]
    copy = tmp_path / "run"
    shutil.copytree(run.root, copy)
    edited = json.loads((copy / "summary.json").read_text(encoding="utf-8"))
    edited["usage"]["users"][0] |= {"memory_tokens": 1234567, "answer_tokens": None}
    (copy / "summary.json").write_text(json.dumps(edited), encoding="utf-8")
    assert main(["report", str(copy)]) == 0
    assert _user_rows((copy / "report.html").read_text(encoding="utf-8"))[0][2:] == ("1,234,567", "unknown")
    edited["usage"]["users"] = None  # a summary.json from before the per-user cost
    (copy / "summary.json").write_text(json.dumps(edited), encoding="utf-8")
    assert main(["report", str(copy)]) == 0
    html = (copy / "report.html").read_text(encoding="utf-8")
    assert 'id="no-user-cost"' in html and '<table class="plain users">' not in html


def test_report_command_rewrites_the_same_page(baseline_run, tmp_path, capsys):
    _, run, _, _ = baseline_run
    copy = tmp_path / "run"
    shutil.copytree(run.root, copy)
    before = (copy / "report.html").read_bytes()
    (copy / "report.html").unlink()
    assert main(["report", str(copy)]) == 0
    assert "report.html" in capsys.readouterr().out
    assert (copy / "report.html").read_bytes() == before.replace(str(run.root).encode(), str(copy).encode())


def test_report_command_names_a_damaged_record_and_refuses_a_run_without_summary(baseline_run, tmp_path, capsys):
    """A damaged record of one question is left out of the page and named in one line (exit 0);
    no summary.json is a refusal in one line."""
    _, run, _, _ = baseline_run
    assert main(["report", str(tmp_path / "nothing")]) == 1
    assert "is not a run directory" in capsys.readouterr().err
    copy = tmp_path / "run"
    shutil.copytree(run.root, copy)
    damaged = next((copy / "users" / "0" / "questions").iterdir()) / "answer-response.json"
    damaged.write_text('{"schema_version": 1, "user_id": "zero"}', encoding="utf-8")
    assert main(["report", str(copy)]) == 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(damaged) in err and "Traceback" not in err
    assert damaged.relative_to(copy).as_posix() in (copy / "report.html").read_text(encoding="utf-8")
    (copy / "summary.json").unlink()
    assert main(["report", str(copy)]) == 1
    assert "summarize" in capsys.readouterr().err


def test_a_report_that_cannot_be_written_is_a_cleanup_error(baseline_run, tmp_path):
    from lifecycle.report_file import write_report_counted
    from mobilemem.records import ErrorLine

    _, run, _, _ = baseline_run
    copy = RunDir(tmp_path / "run")
    shutil.copytree(run.root, copy.root)
    lines = copy.results.read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0].replace('"CORRECT"', '"WRONG"')  # results.jsonl no longer agrees with summary.json
    copy.results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = summary(copy)
    after, written = write_report_counted(copy.root, before)
    assert not written and after.cleanup_error_count == before.cleanup_error_count + 1
    assert summary(copy).cleanup_error_count == after.cleanup_error_count
    [line] = [e for e in read_lines(copy.cleanup_errors, ErrorLine)
              if "disagree" in e.failure.message] or [None]
    assert line is not None and line.stage == "cleanup"
