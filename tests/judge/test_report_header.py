"""report.html names what was run (the candidate by its display name and kind, a plug-in's package,
the judge model), sets the official evaluator's accounting beside the headline (summary.json's
numbers, labelled secondary) and prints the published figures in a table of their own, apart from
this run's numbers (DESIGN §7.2)."""

import re

import pytest

from conftest import ROOT
from judge.run_files import finished_run
from mobilemem.records import SummaryFile
from mobilemem.rundir import RunDir, read_record
from mobilemem_judge.analysis import published
from mobilemem_judge.analysis.report import write_report
from report_page import element_text, marked_rows


def _page(run: RunDir) -> str:
    return write_report(run.root)[0].read_text(encoding="utf-8")


@pytest.mark.parametrize("kind, package, name", [
    ("reme-image", None, "ReMe Image"),
    ("no-memory", None, "No memory (baseline)"),
    ("bm25-rag", None, "BM25-RAG (baseline)"),
    ("long-context", "mobilemem-long-context==0.1.0", "long-context"),  # a plug-in: its raw kind
])
def test_the_header_names_the_candidate_and_the_judge_model(tmp_path, kind, package, name):
    page = _page(finished_run(tmp_path / "run", kind=kind, plugin_package=package, judge_model="judge-model-x"))
    title = re.search(r"<title>(.*?)</title>", page).group(1)
    assert title == f"mobilemem report: {name} on qwen3.8-max"
    assert (element_text(page, "candidate-name"), element_text(page, "candidate-kind")) == (name, kind)
    assert element_text(page, "plugin-package") == package
    assert element_text(page, "judge-model") == "judge-model-x"
    header = element_text(page, "run-header")
    assert ("ReMe 0.4.2.0, preset benchmark" in header) == (kind == "reme-image")
    if kind != "reme-image":  # a baseline's or plug-in's report is not titled like ReMe's
        assert "ReMe" not in title + re.search(r"<h1>(.*?)</h1>", page, re.S).group(1) + header


def test_without_judge_settings_the_judge_model_is_unknown(tmp_path):
    page = _page(finished_run(tmp_path / "run", judge_model=None))
    assert element_text(page, "judge-model") == "unknown (no readable judge-settings.json)"


def test_the_official_accounting_is_summary_json_s_beside_the_unchanged_headline(tmp_path):
    """0_q_1 scored (CORRECT, F1 1.0, BLEU-1 0.5), 0_q_2 an answer gap: the headline is over the one
    scored question, the official accounting over both, the gap counted as 0."""
    run = finished_run(tmp_path / "run", answer_gap=True)
    page = _page(run)
    headline = marked_rows(page, "data-group")["overall:all"]
    assert (headline[1], headline[2], headline[4], headline[6]) == ("1 / 2", "1.0000", "1.0000", "0.5000")
    official = marked_rows(page, "data-official")
    assert official == {"overall:all": ["", "all", "1 / 2", "1", "0.5000", "0.5000", "0.2500"],
                        "language:en": ["language", "en", "1 / 1", "0", "1.0000", "1.0000", "0.5000"],
                        "language:zh": ["language", "zh", "0 / 1", "1", "0.0000", "0.0000", "0.0000"],
                        "difficulty:None": ["difficulty", "None", "1 / 1", "0", "1.0000", "1.0000", "0.5000"],
                        "difficulty:hard": ["difficulty", "hard", "0 / 1", "1", "0.0000", "0.0000", "0.0000"]}
    summary = read_record(run.summary, SummaryFile)
    shown = official["overall:all"]
    assert shown[4:] == [f"{summary.official.overall.accuracy:.4f}", f"{summary.official.overall.f1:.4f}",
                         f"{summary.official.overall.bleu1:.4f}"]
    assert "Secondary figure" in element_text(page, "official") and "not the headline" in element_text(page, "official")


def test_the_published_figures_are_a_table_of_their_own(tmp_path):
    page = _page(finished_run(tmp_path / "run", answer_gap=True))
    section = re.search(r'<section class="reference" id="published">(.*?)</section>', page, re.S).group(1)
    assert marked_rows(section, "data-published") == {
        "NaiveRAG": ["NaiveRAG", "14.5%", "GPT-5.4-mini", "MobileMem's own leaderboard"],
        "Long Context": ["Long Context", "12.16%", "GPT-5.4-mini", "MobileMem's own leaderboard"],
        "Mem0": ["Mem0", "15.04%", "GPT-5.4-mini", "MobileMem's own leaderboard"],
        "LightMem": ["LightMem", "25.81%", "GPT-5.4-mini", "MobileMem's own leaderboard"],
        "EverMemOS": ["EverMemOS", "34.08%", "GPT-5.4-mini", "MobileMem's own leaderboard"]}
    assert section.count("<table") == 1 and "data-group" not in section and "data-official" not in section
    outside = re.sub(r"<script.*?</script>", "", page.replace(section, ""), flags=re.S)  # the page's own text
    assert not [f.system for f in published.FIGURES if f.system in outside or f"{f.accuracy_percent}%" in outside]
    assert "visual reasoning" in section and "LLM-judge accuracy" in section


def test_the_readme_quotes_the_same_published_figures():
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    quoted = ", ".join(f"{f.system} {f.accuracy_percent}%" for f in published.FIGURES)
    assert f"with {published.ANSWERING_MODEL} as the answering model: {quoted}." in readme
