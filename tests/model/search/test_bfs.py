"""The breadth-first explorer on small specifications whose answers are known by hand."""

from __future__ import annotations

import itertools

from model.search.bfs import breadth_first


def ring(n: int):  # type: ignore[no-untyped-def]
    """States 0..n-1; each steps to +1 and +2 (mod n)."""

    def successors(s: int) -> list[tuple[str, int]]:
        return [(f"+1 from {s}", (s + 1) % n), (f"+2 from {s}", (s + 2) % n)]

    return successors


def test_counts_states_and_depth_like_tlc() -> None:
    result = breadth_first(0, ring(10), lambda s: [])
    assert result.complete and result.distinct_states == 10
    # Farthest state is 9 = five +2 steps... no: 9 needs 5 steps (2+2+2+2+1); level = steps + 1.
    assert result.depth == 6
    assert result.states_generated == 1 + 10 * 2


def test_violation_returns_the_shortest_trace_with_labels() -> None:
    result = breadth_first(0, ring(10), lambda s: ["Odd7"] if s == 7 else [])
    assert result.violation is not None and result.violation.invariants == ["Odd7"]
    trace = result.violation.trace
    # One of the shortest paths: the first in successor order.
    assert [step.state for step in trace] == [0, 1, 3, 5, 7]
    assert trace[0].label is None and trace[-1].label == "+2 from 5"
    assert result.depth == 5


def test_violation_in_the_initial_state() -> None:
    result = breadth_first(0, ring(3), lambda s: ["Bad"])
    assert result.violation is not None and len(result.violation.trace) == 1


def test_state_and_depth_limits_stop_without_claiming_completeness() -> None:
    limited = breadth_first(0, ring(100), lambda s: [], max_states=5)
    assert not limited.complete and limited.distinct_states == 5
    assert "state limit" in limited.stopped_reason
    shallow = breadth_first(0, ring(100), lambda s: [], max_depth=3)
    assert not shallow.complete and shallow.depth == 3
    assert shallow.distinct_states == 1 + 2 + 2  # {0}, {1,2}, {3,4}


def test_canonical_merges_symmetric_states() -> None:
    result = breadth_first(0, ring(10), lambda s: [], canonical=lambda s: min(s, (10 - s) % 10))
    assert result.complete and result.distinct_states == 6  # 0, 1|9, 2|8, 3|7, 4|6, 5


def test_progress_is_reported() -> None:
    seen: list[int] = []
    breadth_first(
        0,
        ring(50),
        lambda s: [],
        progress=lambda p: seen.append(p.distinct_states),
        progress_every=10,
    )
    assert seen and all(a < b for a, b in itertools.pairwise(seen))
