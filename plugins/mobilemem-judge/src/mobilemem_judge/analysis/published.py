"""The published figures report.html sets beside a run (README, "The external reference"): kept
here alone, so the page and its tests read one copy.

They are MobileMem's own leaderboard for visual reasoning: LLM-judge accuracy with GPT-5.4-mini
as the answering model, on the official data. They are another model's numbers, for context
only: the report prints them in a table of their own, never with this run's numbers; a run's
figure to read beside them is summary.json's `official` accuracy (every expected question counted).
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE = "MobileMem's own leaderboard"
TASK = "visual reasoning"
METRIC = "LLM-judge accuracy"
ANSWERING_MODEL = "GPT-5.4-mini"


@dataclass(frozen=True)
class PublishedFigure:
    system: str
    accuracy_percent: str  # as published (their digits), without the % sign


FIGURES = (
    PublishedFigure("NaiveRAG", "14.5"),
    PublishedFigure("Long Context", "12.16"),
    PublishedFigure("Mem0", "15.04"),
    PublishedFigure("LightMem", "25.81"),
    PublishedFigure("EverMemOS", "34.08"),
)
