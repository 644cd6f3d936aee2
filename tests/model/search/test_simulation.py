"""Seeded random walks: determinism, replay, budgets."""

from __future__ import annotations

import random

from model.search.simulation import replay_walk, simulate, uniform_policy


def line(s: int) -> list[tuple[str, int]]:
    return [] if s >= 20 else [("inc", s + 1), ("jump", s + 3)]


def test_finds_a_violation_and_replays_it_from_the_walk_seed() -> None:
    result = simulate(
        0,
        line,
        lambda s: ["Hit19"] if s == 19 else [],
        seed=7,
        depth=50,
        walks=500,
        policy=uniform_policy,
    )
    assert result.violation is not None and result.violating_walk_seed is not None
    trace, broken = replay_walk(
        0,
        line,
        lambda s: ["Hit19"] if s == 19 else [],
        walk_seed=result.violating_walk_seed,
        depth=50,
        policy=uniform_policy,
    )
    assert broken == ["Hit19"]
    assert [s.state for s in trace] == [s.state for s in result.violation.trace]


def test_same_seed_same_walks() -> None:
    def run(seed: int) -> tuple[int, int]:
        r = simulate(0, line, lambda s: [], seed=seed, depth=50, walks=30, policy=uniform_policy)
        return r.walks, r.steps

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_budget_and_depth_bound_the_run() -> None:
    calls = iter(range(1000))
    result = simulate(
        0,
        line,
        lambda s: [],
        seed=1,
        depth=5,
        walks=None,
        policy=uniform_policy,
        should_stop=lambda: next(calls) >= 10,
    )
    assert result.walks == 10 and result.steps == 10 * 4  # depth 5 = 4 steps per walk
    assert result.violation is None


def test_uniform_policy_covers_every_option() -> None:
    rng = random.Random(0)
    seen = {uniform_policy(rng).choose(rng, ["a", "b", "c"]) for _ in range(200)}
    assert seen == {0, 1, 2}
