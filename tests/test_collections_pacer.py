"""The ingest task's full collections are paced by image bytes: none until the budget is reached,
then exactly one full (generation 2) collection, seen by the interpreter's own gc callbacks."""

import gc

import pytest

from lifecycle.collections_pacer import CollectionPacer


@pytest.fixture
def full_collections():
    seen: list[int] = []

    def callback(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] == 2:
            seen.append(info["generation"])

    gc.callbacks.append(callback)
    gc.disable()  # only the pacer's collections are counted; gc.collect() still runs
    try:
        yield seen
    finally:
        gc.enable()
        gc.callbacks.remove(callback)


def test_a_collection_runs_once_the_image_bytes_reach_the_budget(full_collections):
    pacer = CollectionPacer(every_bytes=100)
    assert pacer.ingested(60) is False
    assert pacer.ingested(0) is False  # a session without images
    assert full_collections == []
    assert pacer.ingested(60) is True
    assert full_collections == [2]
    assert pacer.ingested(99) is False  # counted again from zero


def test_one_large_session_collects_at_once(full_collections):
    assert CollectionPacer(every_bytes=100).ingested(10_000) is True
    assert full_collections == [2]
