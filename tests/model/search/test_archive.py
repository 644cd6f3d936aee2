"""Archive-guided exploration: reaches deep corners that whole random walks rarely survive to."""

from __future__ import annotations

import itertools

from model.search.archive import explore_archive
from model.search.simulation import simulate, uniform_policy


def trap(s: tuple[int, bool]) -> list[tuple[str, tuple[int, bool]]]:
    """A ladder of 30 rungs where every rung also offers a step into a dead end."""
    rung, dead = s
    if dead or rung >= 30:
        return []
    return [("up", (rung + 1, False)), ("fall", (rung, True))]


def top(s: tuple[int, bool]) -> list[str]:
    return ["Top"] if s[0] == 30 else []


def test_archive_climbs_where_walks_fall() -> None:
    walks = simulate((0, False), trap, top, seed=1, depth=100, walks=2000, policy=uniform_policy)
    assert walks.violation is None  # 2^-30 per walk
    found = explore_archive(
        (0, False), trap, top, cell=lambda s: s, seed=1, policy=uniform_policy, rounds=2000
    )
    assert found.violation is not None and found.violation.invariants == ["Top"]
    assert [step.state[0] for step in found.violation.trace] == list(range(31))
    assert found.cells is not None and found.cells > 30


def test_archive_is_deterministic_for_a_seed_and_respects_max_depth() -> None:
    def run(seed: int) -> tuple[int, int]:
        r = explore_archive(
            (0, False),
            trap,
            lambda s: [],
            cell=lambda s: s,
            seed=seed,
            policy=uniform_policy,
            rounds=50,
            max_depth=10,
        )
        assert r.cells is not None
        return r.steps, r.cells

    assert run(5) == run(5)
    _steps, cells = run(5)
    assert cells <= 2 * 10  # nothing beyond depth 10 is archived


def test_a_cell_keeps_its_first_state_or_with_keep_latest_its_latest() -> None:
    # States 1 and 2 share a cell; which one stands for it depends on keep_latest.
    def fork(s: int) -> list[tuple[str, int]]:
        return [("a", 1), ("b", 2)] if s == 0 else []

    class Recording:
        """An invariant that holds, recording every state it is asked about."""

        def __init__(self) -> None:
            self.reached: list[int] = []

        def __call__(self, s: int) -> list[str]:
            self.reached.append(s)
            return []

    for keep_latest in (False, True):
        check = Recording()
        reached = check.reached
        result = explore_archive(
            0,
            fork,
            check,
            cell=lambda s: min(s, 1),
            seed=1,
            policy=uniform_policy,
            rounds=40,
            keep_latest=keep_latest,
        )
        arrivals = reached[1:]  # the first check is the initial state's
        assert set(arrivals) == {1, 2}  # both states reached the shared cell
        assert arrivals[0] != arrivals[-1]  # (for this seed) so that the two differ
        assert result.archive is not None and len(result.archive) == 2
        kept = result.archive[1][-1].state
        assert kept == (arrivals[-1] if keep_latest else arrivals[0])


def test_each_round_and_each_walk_is_told_the_counts_so_far() -> None:
    # A caller's progress reports (issue 48): the counts before each round, as they grow.
    told: list[tuple[int, int, int]] = []
    found = explore_archive(
        (0, False),
        trap,
        lambda s: [],
        cell=lambda s: s,
        seed=3,
        policy=uniform_policy,
        rounds=40,
        on_round=lambda *counts: told.append(counts),
    )
    assert [rounds for rounds, _, _ in told] == list(range(40))
    assert told[0] == (0, 0, 1)
    assert all(a[1] <= b[1] and a[2] <= b[2] for a, b in itertools.pairwise(told))
    assert told[-1][1] <= found.steps and found.cells is not None and told[-1][2] <= found.cells
    walked: list[tuple[int, int, int]] = []
    simulate(
        (0, False),
        trap,
        lambda s: [],
        seed=3,
        depth=10,
        walks=5,
        policy=uniform_policy,
        on_walk=lambda *counts: walked.append(counts),
    )
    assert [(walks, cells) for walks, _, cells in walked] == [(w, 0) for w in range(5)]
