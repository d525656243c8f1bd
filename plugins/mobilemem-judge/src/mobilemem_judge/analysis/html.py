"""One self-contained HTML page (report.html, compare-*.html): Jinja2 templates with Plotly's
JavaScript inlined once, so the file opens from file:// with no network."""

from __future__ import annotations

from functools import cache

import plotly.graph_objects as go
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from mobilemem.metrics import score_text


@cache
def _environment() -> Environment:
    env = Environment(loader=PackageLoader("mobilemem_judge.analysis", "templates"),
                      autoescape=select_autoescape(["html", "j2"]), trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = number
    env.filters["pct"] = percent
    env.filters["score"] = score_text
    return env


def number(value: float | int | None, digits: int = 4) -> str:
    if value is None:
        return "unknown"
    return f"{value:,}" if isinstance(value, int) else f"{value:.{digits}f}"


def percent(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f}%"


def figure(fig: go.Figure, div_id: str) -> Markup:
    """A chart as a <div> (a fixed id: the same files give the same page) and its script; Plotly's
    library itself is inlined once by the page."""
    fig.update_layout(margin={"l": 50, "r": 20, "t": 40, "b": 40}, template="plotly_white")
    return Markup(fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                              config={"displaylogo": False, "responsive": True}))


def render(template: str, **context) -> str:
    """A template of this package (extending `page.html.j2`) as one offline HTML document."""
    return _environment().get_template(template).render(plotly_js=Markup(get_plotlyjs()), **context)
