"""report.html: one offline page a researcher reads after a run (issue 15). Charts are Plotly, the
per-question table is ITables (DataTables, paged, sortable, filterable by column), the detail view
renders one question at a time from an inlined JSON blob. `write_report(RUN_DIR)` is a pure
function of the run's files, like `summarize`."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from itables.javascript import generate_init_offline_itables_html, to_html_datatable
from itables import options as itables_options
from markupsafe import Markup
from plotly.subplots import make_subplots

from mobilemem.records import EvidenceCell, EvidenceSummary
from mobilemem.rundir import RunDir, write_bytes_atomic
from mobilemem_judge.analysis import published
from mobilemem_judge.analysis.html import figure, render
from mobilemem_judge.analysis.report_data import Group, Report, load_report
from mobilemem_judge.analysis.stats import CONFIDENCE, RESAMPLES

METRICS = (("accuracy", "accuracy"), ("f1", "F1"), ("bleu1", "BLEU-1"))
TABLE_ID = "question-table"
WRAPPED_COLUMNS = ("question", "prediction", "gold")  # long texts: wrapped, not one wide line
FILTERED_COLUMNS = ("status", "label", "language", "difficulty", "opened evidence", "retrieved evidence")


def _error_bars(groups: list[Group], metric: str) -> dict:
    intervals = [getattr(g, metric) for g in groups]
    return {"type": "data", "symmetric": False,
            "array": [(i.high - i.estimate) if i.high is not None else 0 for i in intervals],
            "arrayminus": [(i.estimate - i.low) if i.low is not None else 0 for i in intervals]}


def group_chart(groups: list[Group], title: str) -> go.Figure:
    fig = go.Figure()
    for metric, label in METRICS:
        fig.add_bar(name=label, x=[g.name for g in groups], y=[getattr(g, metric).estimate for g in groups],
                    error_y=_error_bars(groups, metric),
                    customdata=[[g.score.scored, g.score.expected] for g in groups],
                    hovertemplate=f"{label} %{{y:.4f}}<br>scored %{{customdata[0]}}/%{{customdata[1]}}"
                                  "<extra></extra>")
    fig.update_layout(title=title, barmode="group", yaxis={"range": [0, 1.05], "title": "score"}, height=340)
    return fig


def gap_chart(gaps: dict[str, dict[str, int]]) -> go.Figure | None:
    rows = [(stage, reason, n) for stage, reasons in gaps.items() for reason, n in reasons.items()]
    if not rows:
        return None
    fig = go.Figure()
    for stage in gaps:
        mine = [r for r in rows if r[0] == stage]
        fig.add_bar(name=stage, orientation="h", y=[f"{stage}: {r[1]}" for r in mine], x=[r[2] for r in mine])
    fig.update_layout(title="Technical gaps by stage and reason", xaxis={"title": "questions"},
                      height=max(240, 60 + 28 * len(rows)), barmode="stack")
    return fig


def cost_chart(report: Report) -> go.Figure:
    users = report.users or []
    fig = go.Figure()
    fig.add_bar(name="memory (ingest)", x=[f"user {u.user_id}" for u in users],
                y=[u.memory_tokens if not u.reused else None for u in users])
    fig.add_bar(name="answers", x=[f"user {u.user_id}" for u in users], y=[u.answer_tokens for u in users])
    fig.update_layout(title="Tokens per user (this run's requests; unknown and reused left out)",
                      barmode="stack", yaxis={"title": "tokens"}, height=340)
    return fig


def distribution_chart(report: Report) -> go.Figure:
    answered = [q for q in report.questions if q.iterations is not None]
    fig = make_subplots(rows=1, cols=3, subplot_titles=("answer tokens", "iterations", "answer latency (s)"))
    for col, values in enumerate((
            [q.tokens for q in answered if q.tokens is not None], [q.iterations for q in answered],
            [q.latency_s for q in answered if q.latency_s is not None]), start=1):
        fig.add_histogram(x=values, row=1, col=col, showlegend=False, marker={"color": "#4c78a8"})
    fig.update_layout(title="Per question (every answer attempted in this run)", height=300, bargap=0.05)
    return fig


EVIDENCE_CELLS = (("retrieval_miss", "retrieval miss: no hit in an evidence session, no evidence image opened"),
                  ("retrieved_not_opened", "retrieved, not opened: a hit in an evidence session, no image opened"),
                  ("opened_not_retrieved", "opened, not retrieved: an evidence image opened without a hit"),
                  ("retrieved_and_opened", "retrieved and opened"))


def evidence_rows(evidence: EvidenceSummary) -> list[tuple[str, EvidenceCell]]:
    return [(label, getattr(evidence, name)) for name, label in EVIDENCE_CELLS]


def evidence_chart(evidence: EvidenceSummary) -> go.Figure | None:
    cells = [(label.split(":")[0], cell) for label, cell in evidence_rows(evidence) if cell.questions]
    if not cells:
        return None
    fig = go.Figure(go.Bar(x=[name for name, _ in cells], y=[c.accuracy for _, c in cells],
                           text=[f"{c.correct}/{c.questions}" for _, c in cells], textposition="outside"))
    fig.update_layout(title="Accuracy by what the agent did with the evidence", yaxis={"range": [0, 1.15]},
                      height=320)
    return fig


def _yes_no(value: bool | None) -> str:
    return "" if value is None else ("yes" if value else "no")


def question_table(report: Report) -> Markup:
    frame = pd.DataFrame([{
        "#": q.index, "user": q.user_id, "question id": q.question_id, "status": q.status, "label": q.label or "",
        "language": q.language, "difficulty": q.difficulty, "question": q.question or "",
        "prediction": q.prediction or "", "gold": q.gold,
        "F1": q.f1, "BLEU-1": q.bleu1, "tokens": q.tokens, "iterations": q.iterations,
        "opened evidence": _yes_no(q.opened_evidence), "retrieved evidence": _yes_no(q.retrieved_evidence),
    } for q in report.questions])
    filtered = [frame.columns.get_loc(c) for c in FILTERED_COLUMNS]
    wrapped = [frame.columns.get_loc(c) for c in WRAPPED_COLUMNS]
    html = to_html_datatable(
        frame, connected=False, showIndex=False, maxBytes=0, allow_html=False, pageLength=25,
        lengthMenu=[10, 25, 100, 500], classes="display compact", order=[],
        columnControl=["order", ["orderAsc", "orderDesc", "search"]],
        columnDefs=[{"targets": filtered, "columnControl": ["order", ["orderAsc", "orderDesc", "searchList"]]},
                    {"targets": wrapped, "className": "wrap"}],
        ordering={"indicators": False, "handler": False},
        # not ITables' default layout, which it hides on a table that fits one page: the search stays
        layout={"topStart": "search", "topEnd": "pageLength", "bottomStart": "info", "bottomEnd": "paging"},
        text_in_header_can_be_selected=False, display_logo_when_loading=False, table_id=TABLE_ID)
    return Markup(html)


def _json_script(value) -> Markup:
    """JSON for a <script type="application/json">: `<` escaped so no text can close the tag."""
    return Markup(json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c"))


def render_report(report: Report) -> str:
    groups = report.groups
    evidence = report.summary.evidence
    return render(
        "report.html.j2", report=report, run=report.run, header=report.header, summary=report.summary,
        official=report.summary.official, published=published,
        overall=groups[0], gap_count=report.summary.gap_count, by_language=[g for g in groups if g.kind == "language"],
        by_difficulty=[g for g in groups if g.kind == "difficulty"],
        language_chart=figure(group_chart([g for g in groups if g.kind == "language"], "By language"),
                              "chart-language"),
        difficulty_chart=figure(group_chart([g for g in groups if g.kind == "difficulty"], "By difficulty"),
                                "chart-difficulty"),
        gap_chart=_maybe_figure(gap_chart(report.summary.gaps), "chart-gaps"),
        cost_chart=figure(cost_chart(report), "chart-cost"),
        distribution_chart=figure(distribution_chart(report), "chart-distributions"),
        evidence=evidence, evidence_rows=evidence_rows(evidence) if evidence else [], evidence_chart=_maybe_figure(evidence_chart(evidence) if evidence else None,
                                                        "chart-evidence"),
        itables_init=Markup(generate_init_offline_itables_html(itables_options.dt_bundle)),
        question_table=question_table(report), details=_json_script(report.details),
        thumbnails=_json_script({"uris": report.thumbnails.uris, "missing": report.thumbnails.missing}),
        confidence=CONFIDENCE, resamples=RESAMPLES)


def _maybe_figure(fig: go.Figure | None, div_id: str) -> Markup | None:
    return figure(fig, div_id) if fig is not None else None


def write_report(run_dir: Path) -> tuple[Path, list[str]]:
    """Write RUN_DIR/report.html (atomically); its path, and the files of the run it left out as
    damaged (one line each, run-relative)."""
    report = load_report(Path(run_dir))
    target = RunDir(report.run_dir).report
    write_bytes_atomic(target, render_report(report).encode("utf-8"))
    return target, report.damaged
