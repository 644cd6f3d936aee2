"""The sharded breadth-first search gives the single-process search's result, state for state,
whatever the number of shards: counts, depth, the trace to a violation, and the representative
kept for each fingerprint even where merging states is unsound."""

from __future__ import annotations

import random
from collections.abc import Callable
from itertools import pairwise

import pytest

from model.bookkeeper.actions import init_state
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import _check, _successors
from model.bookkeeper.invariants import invariants_for
from model.bookkeeper.symmetry import canonical_fingerprint
from model.search.bfs import SearchResult, breadth_first
from model.search.sharded_bfs import Shard, sharded_breadth_first

Graph = Callable[[int], list[tuple[str, int]]]


def random_graph(seed: int, states: int = 400, fanout: int = 4) -> Graph:
    rng = random.Random(seed)
    table = {
        s: [rng.randrange(states) for _ in range(rng.randrange(fanout + 1))] for s in range(states)
    }

    def successors(s: int) -> list[tuple[str, int]]:
        return [(f"{s}->{t}", t) for t in table[s]]

    return successors


def summary(result: SearchResult[int, str]) -> tuple[object, ...]:
    trace = None
    if result.violation is not None:
        trace = [(step.label, step.state) for step in result.violation.trace]
    return result.complete, result.distinct_states, result.depth, trace


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(("shards", "round_parents"), [(1, 3), (2, 1), (2, 5), (3, 64), (5, 2)])
def test_unsound_merging_keeps_the_same_representatives(
    seed: int, shards: int, round_parents: int
) -> None:
    """``s % 37`` merges states that do not behave alike: which member is kept decides what
    is reachable, so equal counts mean the same member was kept every time, whether a level
    is expanded at once or in rounds of a few parents."""
    graph = random_graph(seed)
    plain = breadth_first(0, graph, lambda s: [], canonical=lambda s: s % 37)
    sharded = sharded_breadth_first(
        0,
        graph,
        lambda s: [],
        shards=shards,
        canonical=lambda s: s % 37,
        round_parents=round_parents,
    )
    assert summary(sharded) == summary(plain)
    assert plain.complete


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(("shards", "round_parents"), [(2, 1 << 16), (3, 1 << 16), (2, 1), (3, 4)])
def test_the_violation_and_its_trace_are_the_first_the_plain_search_meets(
    seed: int, shards: int, round_parents: int
) -> None:
    graph = random_graph(seed)

    def check(s: int) -> list[str]:
        return ["Bad"] if s % 23 == 5 else []

    plain = breadth_first(0, graph, check)
    sharded = sharded_breadth_first(0, graph, check, shards=shards, round_parents=round_parents)
    assert (plain.violation is None) == (sharded.violation is None)
    if plain.violation is not None and sharded.violation is not None:
        assert sharded.depth == plain.depth
        assert [(s.label, s.state) for s in sharded.violation.trace] == [
            (s.label, s.state) for s in plain.violation.trace
        ]
        # It finishes the violating round: it may count more on the way, never fewer.
        assert sharded.distinct_states >= plain.distinct_states


def test_a_violating_initial_state_and_the_limits() -> None:
    graph = random_graph(1)
    found = sharded_breadth_first(0, graph, lambda s: ["Bad"], shards=2)
    assert found.violation is not None and len(found.violation.trace) == 1
    shallow = sharded_breadth_first(0, graph, lambda s: [], shards=2, max_depth=3)
    assert not shallow.complete and shallow.depth == 3
    assert (
        shallow.distinct_states
        == breadth_first(0, graph, lambda s: [], max_depth=3).distinct_states
    )
    limited = sharded_breadth_first(0, graph, lambda s: [], shards=2, max_states=20)
    assert not limited.complete and "state limit" in limited.stopped_reason
    assert limited.distinct_states >= 20
    with pytest.raises(ValueError, match="round_parents"):
        sharded_breadth_first(0, graph, lambda s: [], shards=2, round_parents=0)


def test_rounds_report_progress_and_stop_at_the_state_limit_within_a_level() -> None:
    # A tree of fanout 3: level k holds 3**(k-1) states.
    def tree(s: int) -> list[tuple[str, int]]:
        return [(f"{s}.{k}", 3 * s + k) for k in (1, 2, 3)] if s < 3**7 else []

    reports: list[tuple[int, int, int]] = []
    limited = sharded_breadth_first(
        0,
        tree,
        lambda s: [],
        shards=2,
        max_states=200,
        round_parents=10,
        progress=lambda p: reports.append((p.distinct_states, p.depth, p.queue)),
    )
    # Levels 1..5 hold 1 + 3 + 9 + 27 + 81 = 121 states; level 6 (243) is made from the 81
    # parents of level 5 in 9 rounds, each shard expanding a ninth of its part in each: about
    # 27 states a round. The search stops after the round that reaches 200.
    assert not limited.complete and limited.depth == 6
    assert 200 <= limited.distinct_states <= 200 + 3 * 10
    level_5 = [(distinct, queue) for distinct, depth, queue in reports if depth == 5]
    assert level_5[-1] == (limited.distinct_states, limited.distinct_states - 121)
    assert len(level_5) == 3 and all(20 <= b - a <= 30 for (a, _), (b, _) in pairwise(level_5))
    # Each round reports: the 27 parents of level 4 take 3 rounds of 10.
    assert sum(1 for _distinct, depth, _queue in reports if depth == 4) == 3


def test_states_are_moved_to_the_shard_that_has_few() -> None:
    # Every state of a chain is generated by the shard holding its parent: without moving,
    # one shard would do all the work. The counts do not change.
    def chain(s: int) -> list[tuple[str, int]]:
        return [(f"{s}+{k}", s * 10 + k) for k in range(3)] if s < 10_000 else []

    sizes: list[tuple[int, ...]] = []
    original = Shard.keep

    def spy(self: Shard[int, str], won: object) -> object:
        answer = original(self, won)  # type: ignore[arg-type]
        sizes.append((self.index, len(answer)))
        return answer

    Shard.keep = spy  # type: ignore[method-assign, assignment]
    try:
        sharded = sharded_breadth_first(1, chain, lambda s: [], shards=2)
    finally:
        Shard.keep = original  # type: ignore[method-assign]
    assert summary(sharded) == summary(breadth_first(1, chain, lambda s: []))
    last_level = dict(sizes[-4:-2])
    assert min(last_level.values()) > 0.3 * sum(last_level.values())


@pytest.mark.parametrize("symmetry", [False, True])
@pytest.mark.parametrize("shards", [1, 2, 3])
def test_the_fidelity_configuration_counts_with_any_number_of_shards(
    symmetry: bool, shards: int
) -> None:
    cfg = ModelConfig(bookies=3, clients=1, write_quorum=2, ack_quorum=1, send_limit=2)
    canonical = (lambda s: canonical_fingerprint(cfg, s)) if symmetry else None
    result = sharded_breadth_first(
        init_state(cfg),
        _successors(cfg),
        _check(cfg, invariants_for(cfg)),
        shards=shards,
        canonical=canonical,
    )
    assert result.complete and result.violation is None
    assert (result.distinct_states, result.depth) == ((7_107, 19) if symmetry else (21_147, 19))


def test_defect_1_gives_the_plain_search_trace() -> None:
    cfg = ModelConfig(
        bookies=2, clients=2, write_quorum=2, ack_quorum=2, recovery_reads_fence=False
    )
    args = (init_state(cfg), _successors(cfg), _check(cfg, invariants_for(cfg)))
    plain = breadth_first(*args)
    sharded = sharded_breadth_first(*args, shards=2)
    assert plain.violation is not None and sharded.violation is not None
    assert sharded.violation.invariants == plain.violation.invariants
    assert [s.state for s in sharded.violation.trace] == [s.state for s in plain.violation.trace]
    assert len(sharded.violation.trace) == 14


def test_every_round_gives_both_shards_work() -> None:
    # States stay where they were made, so each shard's states cluster by rank; a round
    # takes the same share of each shard's states, so both work in every round instead of
    # taking turns.
    def chain(s: int) -> list[tuple[str, int]]:
        return [(f"{s}+{k}", s * 10 + k) for k in range(3)] if s < 10**12 else []

    per_round: list[tuple[int, int]] = []
    original = Shard.expand

    def spy(self: Shard[int, str], portion: tuple[int, int] = (1, 1)) -> object:
        before = self.generated
        answer = original(self, portion)
        per_round.append((self.index, self.generated - before))
        return answer

    Shard.expand = spy  # type: ignore[method-assign, assignment]
    try:
        sharded_breadth_first(1, chain, lambda s: [], shards=2, max_depth=9, round_parents=100)
    finally:
        Shard.expand = original  # type: ignore[method-assign]
    rounds = list(zip(per_round[::2], per_round[1::2], strict=True))
    full = [(a, b) for (_i, a), (_j, b) in rounds if a + b >= 270]
    assert len(full) > 20
    assert all(min(a, b) >= 0.4 * (a + b) for a, b in full)
