"""The disk-backed BFS level gives exactly the in-memory search."""

from __future__ import annotations

from conformance.spill import SpillingLevel, spilling
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import check_exhaustively
from model.search.bfs import breadth_first


def ring(n: int):  # type: ignore[no-untyped-def]
    def successors(s: int) -> list[tuple[str, int]]:
        return [(f"+1 from {s}", (s + 1) % n), (f"+2 from {s}", (s + 2) % n)]

    return successors


def test_a_spilled_level_reads_back_everything_in_order() -> None:
    level: SpillingLevel[str] = SpillingLevel(spill_over=2)
    for i in range(7):
        level.append((i, f"s{i}"))
    assert len(level) == 7 and list(level) == [(i, f"s{i}") for i in range(7)]
    level.close()


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
