"""The long-context plug-in's cut (examples/long-context, window.py): the newest turns that fit both the
token budget and the image limit, as one stretch ending at the last turn; the module is pure and is
loaded from the example's source, which this environment need not have installed."""

import importlib.util

from hypothesis import given
from hypothesis import strategies as st

from conftest import ROOT

_SPEC = importlib.util.spec_from_file_location(
    "long_context_window", ROOT / "examples/long-context/src/mobilemem_long_context/window.py")
window = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(window)


def test_everything_fits():
    assert window.first_kept([3, 4, 5], [False, True, False], budget=12, image_limit=1) == (0, None)


def test_the_oldest_turns_are_cut_by_the_budget():
    assert window.first_kept([3, 4, 5], [False, False, False], budget=9, image_limit=10) == (1, "context")


def test_the_image_limit_cuts_at_the_oldest_image_that_does_not_fit():
    assert window.first_kept([1, 1, 1, 1], [True, False, True, True], budget=100, image_limit=2) == (1, "images")


def test_nothing_fits():
    assert window.first_kept([5], [False], budget=4, image_limit=1) == (1, "context")
    assert window.first_kept([], [], budget=0, image_limit=0) == (0, None)


@given(st.lists(st.tuples(st.integers(0, 50), st.booleans()), max_size=40), st.integers(0, 400), st.integers(0, 8))
def test_the_kept_stretch_fits_and_one_more_turn_would_not(turns, budget, image_limit):
    costs, images = [c for c, _ in turns], [i for _, i in turns]
    start, cut_by = window.first_kept(costs, images, budget, image_limit)
    assert sum(costs[start:]) <= budget and sum(images[start:]) <= image_limit
    if start == 0:
        assert cut_by is None
    else:
        previous = start - 1
        over_budget = sum(costs[previous:]) > budget
        assert cut_by == ("context" if over_budget else "images")
        assert over_budget or sum(images[previous:]) > image_limit
