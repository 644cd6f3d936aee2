"""``model.search.collector``: no full collections inside a search, the thresholds restored on
every exit, and the searches run under it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from model.search.bfs import breadth_first
from model.search.collector import NEVER, YOUNG_THRESHOLD, young_collections_only
from model.search.sharded_bfs import sharded_breadth_first


@pytest.fixture(autouse=True)
def default_thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_inside_no_full_collection_and_restored_after() -> None:
    with young_collections_only():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, NEVER)
    assert gc.get_threshold() == (700, 10, 10)


def test_restored_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), young_collections_only():
        raise RuntimeError("a failing search")
    assert gc.get_threshold() == (700, 10, 10)


def test_collection_switched_off_stays_off() -> None:
    gc.set_threshold(0, 10, 10)
    with young_collections_only():
        assert gc.get_threshold()[0] == 0
    assert gc.get_threshold() == (0, 10, 10)


def _counting_search(search: str) -> list[tuple[int, int, int]]:
    seen: list[tuple[int, int, int]] = []

    def successors(n: int) -> list[tuple[None, int]]:
        seen.append(gc.get_threshold())
        return [(None, n + 1)] if n < 5 else []

    if search == "plain":
        breadth_first(0, successors, lambda n: [])
    else:
        sharded_breadth_first(0, successors, lambda n: [], shards=2)
    return seen


@pytest.mark.parametrize("search", ["plain", "sharded"])
def test_the_searches_expand_states_without_full_collections(search: str) -> None:
    thresholds = _counting_search(search)
    assert thresholds and all(t[2] == NEVER for t in thresholds)
    assert gc.get_threshold() == (700, 10, 10)
