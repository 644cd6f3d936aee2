"""The disk-backed BFS level gives exactly the in-memory search."""

from __future__ import annotations

import contextlib
import pickle

import pytest

from conformance.exploration.spill import SpillingLevel, spilling
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import check_exhaustively
from model.search.bfs import breadth_first


def ring(n: int):  # type: ignore[no-untyped-def]
    def successors(s: int) -> list[tuple[str, int]]:
        return [(f"+1 from {s}", (s + 1) % n), (f"+2 from {s}", (s + 2) % n)]

    return successors


@pytest.mark.parametrize("batch", [1, 2, 3, 256])
@pytest.mark.parametrize("count", [0, 2, 3, 7, 12, 600])
def test_a_spilled_level_reads_back_everything_in_order(batch: int, count: int) -> None:
    level: SpillingLevel[str] = SpillingLevel(spill_over=2, batch=batch)
    for i in range(count):
        level.append((i, f"s{i}"))
    expected = [(i, f"s{i}") for i in range(count)]
    assert len(level) == count and list(level) == expected
    assert list(level) == expected  # read again: the level is read once per use, not consumed
    level.close()
    assert list(level) == []


def test_states_go_to_disk_a_batch_at_a_time() -> None:
    level: SpillingLevel[tuple[int, ...]] = SpillingLevel(spill_over=10, batch=4)
    shared = (1, 2, 3)
    for i in range(30):
        level.append((i, shared))
    assert level._file is not None
    level._file.flush()
    level._file.seek(0)
    batches = []
    with contextlib.suppress(EOFError):
        while True:
            batches.append(pickle.load(level._file))
    # The first 11 went at the spill, then batches of 4; the last 3 wait in memory.
    assert [len(b) for b in batches] == [4, 4, 3, 4, 4, 4, 4]
    assert list(level) == [(i, shared) for i in range(30)]
    level.close()


def test_a_batch_must_hold_a_state() -> None:
    with pytest.raises(ValueError, match="batch"):
        SpillingLevel(batch=0)


def test_spilling_search_equals_the_in_memory_one() -> None:
    in_memory = breadth_first(0, ring(200), lambda s: ["Hit"] if s == 199 else [])
    spilled = breadth_first(
        0, ring(200), lambda s: ["Hit"] if s == 199 else [], new_level=spilling(3)
    )
    assert spilled.distinct_states == in_memory.distinct_states
    assert spilled.violation is not None and in_memory.violation is not None
    assert [s.state for s in spilled.violation.trace] == [
        s.state for s in in_memory.violation.trace
    ]


def test_model_figures_through_the_spill() -> None:
    cfg = ModelConfig(bookies=3, clients=1, write_quorum=2, ack_quorum=1, send_limit=2)
    result = check_exhaustively(cfg, new_level=spilling(300))
    assert (result.distinct_states, result.depth, result.complete) == (21_147, 19, True)
