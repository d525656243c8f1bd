"""compare-<name>.html: a `CompareFile` as one offline page (tables, the differences chart, flips)."""

from __future__ import annotations

import plotly.graph_objects as go

from mobilemem.records import CompareFile, PairedGroup
from mobilemem_judge.analysis.html import figure, render

SCORES = (("accuracy", "accuracy"), ("f1", "F1"), ("bleu1", "BLEU-1"))


def _groups(result: CompareFile) -> list[tuple[str, PairedGroup]]:
    return [("overall", result.overall),
            *((f"language {name}", group) for name, group in result.by_language.items()),
            *((f"difficulty {name}", group) for name, group in result.by_difficulty.items())]


def differences_figure(result: CompareFile) -> go.Figure:
    """Every B - A difference with its paired bootstrap interval, one colour per score."""
    groups = _groups(result)
    fig = go.Figure()
    for field, title in SCORES:
        scores = [getattr(group, field) for _, group in groups]
        fig.add_trace(go.Scatter(
            name=title, mode="markers", x=[f"{label} (n={group.compared})" for label, group in groups],
            y=[s.difference for s in scores], marker={"size": 10},
            error_y={"type": "data", "symmetric": False,
                     "array": [None if s.high is None else s.high - s.difference for s in scores],
                     "arrayminus": [None if s.low is None else s.difference - s.low for s in scores]}))
    fig.add_hline(y=0, line={"color": "#8c959f", "dash": "dot"})
    fig.update_layout(title=f"B − A with {100 * result.confidence:.0f}% paired bootstrap intervals",
                      yaxis_title="difference (B − A)", scattermode="group", height=460)
    return fig


def render_compare(result: CompareFile) -> str:
    return render("compare.html.j2", result=result, chart=figure(differences_figure(result), "chart-differences"),
                  scores=SCORES)
