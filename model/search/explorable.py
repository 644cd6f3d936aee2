"""A spec as every explorer takes it, and the explorers over it: the exhaustive breadth-first
search, the seeded simulations, the replay of a simulated walk and the causal minimisation of a
violating trace.

Each spec says once what these need (:class:`Explorable`: its initial state, its successors,
its invariants, its symmetry, its coarse cells and swarm policy for the simulations, the events
of its steps for the minimisation); ``model.bookkeeper.explore`` and
``model.zab.protocol.explore`` build theirs from a configuration, and the model-check commands
run any of them alike.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from model.search.bfs import (
    BreadthFirst,
    Canonical,
    Check,
    Level,
    ListLevel,
    Progress,
    SearchResult,
    Step,
    Successors,
    breadth_first,
)
from model.search.minimise import minimise_trace
from model.search.simulation import PolicyFactory, RoundHook, SimulationResult, replay_walk
from model.search.strategies import simulate_with

S = TypeVar("S", bound=Hashable)
L = TypeVar("L")


@dataclass(frozen=True)
class Explorable(Generic[S, L]):
    """A spec bound to one configuration, in the terms of the generic explorers.

    ``successors``: the labelled next states of a state; ``check``: the names of the invariants
    a state breaks; ``symmetry``: makes the key of a state's orbit under the spec's renamings,
    one per search (it may remember recent states), or raises the spec's configuration error
    where the configuration has no symmetry; ``cell``: the coarse projection of a state the
    archive keeps one state of; ``swarm``: the spec's swarm policy; ``archive_keeps_latest``:
    whether an archive cell keeps its latest state rather than its first
    (:func:`~model.search.archive.explore_archive`); ``event_of``: what a step does, without
    what depends on the past, for the causal minimisation (:mod:`model.search.minimise`).
    """

    initial: S
    successors: Successors[S, L]
    check: Check[S]
    symmetry: Callable[[], Canonical[S]]
    cell: Callable[[S], Hashable]
    swarm: PolicyFactory[L]
    event_of: Callable[[L], Hashable]
    archive_keeps_latest: bool = False


def check_exhaustively(
    spec: Explorable[S, L],
    *,
    symmetry: bool = False,
    max_states: int | None = None,
    max_depth: int | None = None,
    progress: Callable[[Progress], None] | None = None,
    progress_every: int = 100_000,
    new_level: Callable[[], Level[S]] = ListLevel,
    search: BreadthFirst = breadth_first,
) -> SearchResult[S, L]:
    """Breadth-first search of every reachable state, as TLC's model checking does (with
    ``symmetry``: one state per orbit under the spec's renamings); ``search`` may spread the
    work over processes and ``new_level`` keep large levels on disk (the caller's)."""
    return search(
        spec.initial,
        spec.successors,
        spec.check,
        canonical=spec.symmetry() if symmetry else None,
        max_states=max_states,
        max_depth=max_depth,
        progress=progress,
        progress_every=progress_every,
        new_level=new_level,
    )


def simulate_randomly(
    spec: Explorable[S, L],
    *,
    strategy: str,
    seed: int,
    depth: int,
    walks: int | None,
    should_stop: Callable[[], bool] = lambda: False,
    steps_allowed: Callable[[], int] | None = None,
    on_round: RoundHook | None = None,
) -> SimulationResult[S, L]:
    """Seeded random simulation with ``strategy`` (:data:`~model.search.strategies.STRATEGIES`)
    until a violation or the budget ends. ``walks`` counts rounds for ``archive``;
    ``steps_allowed``: its step bound; ``on_round(rounds, steps, cells)``: the counts so far,
    told before each round (or walk), for the caller's progress reports."""
    return simulate_with(
        strategy,
        spec.initial,
        spec.successors,
        spec.check,
        cell=spec.cell,
        swarm=spec.swarm,
        seed=seed,
        depth=depth,
        walks=walks,
        should_stop=should_stop,
        steps_allowed=steps_allowed,
        keep_latest=spec.archive_keeps_latest,
        on_round=on_round,
    )


def replay(
    spec: Explorable[S, L], *, walk_seed: int, depth: int, policy: PolicyFactory[L]
) -> tuple[list[Step[S, L]], list[str]]:
    """Replay one simulated walk from the walk seed a simulation reported, with the policy it
    walked with."""
    return replay_walk(
        spec.initial,
        spec.successors,
        spec.check,
        walk_seed=walk_seed,
        depth=depth,
        policy=policy,
    )


def minimise(spec: Explorable[S, L], trace: list[Step[S, L]]) -> list[Step[S, L]]:
    """A shorter trace that still breaks an invariant, by causal deletion
    (:mod:`model.search.minimise`)."""
    return minimise_trace(trace, spec.successors, spec.event_of, spec.check)


__all__ = ["Explorable", "check_exhaustively", "minimise", "replay", "simulate_randomly"]
