"""The simulation strategies every spec's explorer offers, over any spec's successor function.

- ``archive``: short walks with the spec's swarm policy, restarted from an archive of coarse
  cells (``model.search.archive``); ``walks`` counts rounds;
- ``swarm``: whole walks with the spec's swarm policy;
- ``uniform``: whole walks choosing uniformly among successors, as TLC's simulation does.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from model.search.archive import explore_archive
from model.search.simulation import (
    PolicyFactory,
    RoundHook,
    SimulationResult,
    simulate,
    uniform_policy,
)

S = TypeVar("S", bound=Hashable)
L = TypeVar("L")

STRATEGIES = ("archive", "swarm", "uniform")


def simulate_with(
    strategy: str,
    init: S,
    successors: Callable[[S], Sequence[tuple[L, S]]],
    check: Callable[[S], list[str]],
    *,
    cell: Callable[[S], Hashable],
    swarm: PolicyFactory[L],
    seed: int,
    depth: int,
    walks: int | None,
    should_stop: Callable[[], bool] = lambda: False,
    steps_allowed: Callable[[], int] | None = None,
    keep_latest: bool = False,
    on_round: RoundHook | None = None,
) -> SimulationResult[S, L]:
    """Seeded random simulation with ``strategy`` until a violation or the budget ends
    (ValueError for an unknown strategy). ``cell``: the spec's coarse abstraction of a state,
    for the archive; ``swarm``: the spec's swarm policy; ``steps_allowed``, ``keep_latest``:
    the archive's step bound and which state a cell keeps
    (:func:`~model.search.archive.explore_archive`; the other strategies take neither);
    ``on_round(rounds, steps, cells)``: the counts before each round or walk, for progress."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    if steps_allowed is not None and strategy != "archive":
        raise ValueError(f"a step bound is the archive's; the {strategy} strategy takes none")
    if strategy == "archive":
        return explore_archive(
            init,
            successors,
            check,
            cell=cell,
            seed=seed,
            policy=swarm,
            max_depth=depth,
            rounds=walks,
            should_stop=should_stop,
            steps_allowed=steps_allowed,
            keep_latest=keep_latest,
            on_round=on_round,
        )
    policy: PolicyFactory[L] = swarm if strategy == "swarm" else uniform_policy
    return simulate(
        init,
        successors,
        check,
        seed=seed,
        depth=depth,
        walks=walks,
        policy=policy,
        should_stop=should_stop,
        on_walk=on_round,
    )
