"""The explorers over a spec given as an ``Explorable`` value (a toy spec; the BookKeeper and
Zab specs' counts are pinned against TLC's in their own tests)."""

from __future__ import annotations

import pytest

from model.search.bfs import Step
from model.search.explorable import check_exhaustively, minimise, replay, simulate_randomly
from model.search.simulation import uniform_policy
from tests.model.search.toy_spec import TOP, State, check, successors, toy


def test_the_exhaustive_search_counts_every_state_and_finds_the_violation() -> None:
    made: list[int] = []
    found = check_exhaustively(toy(made), max_states=None)
    assert made == []  # no symmetry asked, none made
    assert found.violation is not None
    assert found.violation.invariants == ["NotBothAtTop"]
    # The shortest path to (3, 3): three of each increment, no toggle.
    assert [s.label for s in found.violation.trace[1:]].count("toggle") == 0
    assert len(found.violation.trace) == 2 * TOP + 1
    bounded = check_exhaustively(toy(), max_depth=2 * TOP)
    assert bounded.violation is None
    # Within 5 steps: (a, b, False) with a + b <= 5 (15 pairs of counters) and (a, b, True),
    # one toggle at least, with a + b <= 4 (13).
    assert bounded.distinct_states == 15 + 13


def test_symmetry_makes_one_key_per_search_and_counts_orbits() -> None:
    made: list[int] = []
    spec = toy(made)
    plain = check_exhaustively(spec, max_depth=2 * TOP)
    reduced = check_exhaustively(spec, symmetry=True, max_depth=2 * TOP)
    check_exhaustively(spec, symmetry=True, max_depth=2 * TOP)
    assert made == [1, 1]
    # Unordered pairs of counters within 5 steps: 9 with the flag off, 8 with it on.
    assert (plain.distinct_states, reduced.distinct_states) == (15 + 13, 9 + 8)


@pytest.mark.parametrize("strategy", ["uniform", "swarm", "archive"])
def test_every_strategy_finds_the_violation(strategy: str) -> None:
    found = simulate_randomly(toy(), strategy=strategy, seed=1, depth=40, walks=200)
    assert found.violation is not None
    assert check(found.violation.trace[-1].state) == ["NotBothAtTop"]


def test_an_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown strategy"):
        simulate_randomly(toy(), strategy="dfs", seed=0, depth=10, walks=1)


def test_a_reported_walk_replays_to_the_same_violation() -> None:
    found = simulate_randomly(toy(), strategy="uniform", seed=3, depth=40, walks=20)
    assert found.violation is not None and found.violating_walk_seed is not None
    trace, broken = replay(
        toy(), walk_seed=found.violating_walk_seed, depth=40, policy=uniform_policy
    )
    assert broken == ["NotBothAtTop"]
    assert [s.state for s in trace] == [s.state for s in found.violation.trace]


def test_minimise_drops_the_steps_the_violation_does_not_need() -> None:
    state: State = (0, 0, False)
    trace: list[Step[State, str]] = [Step(None, state)]
    for label in ["toggle", "incA", "incA", "toggle", "incA", "incB", "incB", "toggle", "incB"]:
        state = dict(successors(state))[label]
        trace.append(Step(label, state))
    shorter = minimise(toy(), trace)
    assert [s.label for s in shorter[1:]] == ["incA"] * TOP + ["incB"] * TOP
    assert check(shorter[-1].state) == ["NotBothAtTop"]
