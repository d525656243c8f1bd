"""Which part of the history fits (pure): the newest turns whose estimated tokens fit the budget and
whose images fit the image limit, as one unbroken stretch that ends at the last turn. Going back
from the newest turn, the first turn that would pass either limit is where the history is cut."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

CutBy = Literal["context", "images"]


def first_kept(costs: Sequence[int], has_image: Sequence[bool], budget: int,
               image_limit: int) -> tuple[int, CutBy | None]:
    """The index of the oldest turn sent (len(costs) when none fits) and which limit cut the rest."""
    used = images = 0
    for index in range(len(costs) - 1, -1, -1):
        if used + costs[index] > budget:
            return index + 1, "context"
        if has_image[index] and images + 1 > image_limit:
            return index + 1, "images"
        used, images = used + costs[index], images + has_image[index]
    return 0, None
