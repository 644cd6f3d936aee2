"""The Zab spec bound to the generic explorers (``model.search.explorable``): breadth-first
search with fingerprints (and symmetry over servers), seeded simulation, archive-guided
simulation and causal minimisation of a violating trace."""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence

from model.search import explorable as explorers
from model.search.bfs import (
    BreadthFirst,
    Level,
    ListLevel,
    Progress,
    SearchResult,
    Step,
    breadth_first,
)
from model.search.explorable import Explorable
from model.search.memo import remembering
from model.search.simulation import PolicyFactory, SimulationResult, uniform_policy
from model.zab.protocol.actions import ACTIONS, Label, initial_state, successors
from model.zab.protocol.config import ZabConfig
from model.zab.protocol.invariants import Invariant, invariants_for, violated
from model.zab.protocol.records import State
from model.zab.protocol.symmetry import canonical_fingerprint


def successor_function(cfg: ZabConfig) -> Callable[[State], list[tuple[Label, State]]]:
    def step(state: State) -> list[tuple[Label, State]]:
        return [(t.label, t.state) for t in successors(cfg, state)]

    return step


def check_function(
    cfg: ZabConfig, invariants: tuple[Invariant, ...] | None = None
) -> Callable[[State], list[str]]:
    chosen = invariants if invariants is not None else invariants_for(cfg)

    def check(state: State) -> list[str]:
        return violated(state, chosen)

    return check


def explorable(
    cfg: ZabConfig, invariants: tuple[Invariant, ...] | None = None
) -> Explorable[State, Label]:
    """The spec under ``cfg`` as the explorers take it, checking ``invariants`` (default: the
    configuration's); its symmetry is over servers."""
    return Explorable(
        initial=initial_state(cfg),
        successors=successor_function(cfg),
        check=check_function(cfg, invariants),
        symmetry=lambda: remembering(canonical_fingerprint),
        cell=progress_cell,
        swarm=swarm_policy,
        event_of=event_of,
    )


def check_exhaustively(
    cfg: ZabConfig,
    *,
    symmetry: bool = False,
    max_states: int | None = None,
    max_depth: int | None = None,
    invariants: tuple[Invariant, ...] | None = None,
    progress: Callable[[Progress], None] | None = None,
    progress_every: int = 100_000,
    new_level: Callable[[], Level[State]] = ListLevel,
    search: BreadthFirst = breadth_first,
) -> SearchResult[State, Label]:
    """Breadth-first search of every reachable state, as TLC's model checking does
    (optionally with symmetry reduction over servers)."""
    return explorers.check_exhaustively(
        explorable(cfg, invariants),
        symmetry=symmetry,
        max_states=max_states,
        max_depth=max_depth,
        progress=progress,
        progress_every=progress_every,
        new_level=new_level,
        search=search,
    )


class SwarmPolicy:
    """Swarm testing (Groce et al., ISSTA 2012): each walk switches off a random subset of the
    action kinds, then chooses uniformly among the remaining steps. Some walks thus never
    time out, or never take a client request early, and the others get more of the walk."""

    #: Never switched off: without them no round gets anywhere.
    ESSENTIAL = frozenset({"UpdateLeader", "FollowLeader", "ConnectAndFollowerSendCEPOCH"})

    def __init__(self, rng: random.Random, *, max_disabled_fraction: float = 0.4) -> None:
        fraction = rng.uniform(0.0, max_disabled_fraction)
        self.disabled = frozenset(
            a for a in ACTIONS if a not in self.ESSENTIAL and rng.random() < fraction
        )

    def choose(self, rng: random.Random, labels: Sequence[Label]) -> int:
        allowed = [k for k, label in enumerate(labels) if label.action not in self.disabled]
        return rng.choice(allowed) if allowed else rng.randrange(len(labels))


def swarm_policy(rng: random.Random) -> SwarmPolicy:
    return SwarmPolicy(rng)


def progress_cell(s: State) -> Hashable:
    """A coarse projection for archive-guided simulation: each server's role, phase, epochs,
    history length, committed index and learners, and the recorder's counts. Messages in
    flight and acknowledgement sets are left out."""
    return (
        s.state,
        s.zab_state,
        s.accepted_epoch,
        s.current_epoch,
        tuple(len(h) for h in s.history),
        tuple(c.index for c in s.last_committed),
        s.learners,
        s.send_counter,
        s.recorder.n_timeout,
        s.recorder.n_restart,
    )


def simulate_randomly(
    cfg: ZabConfig,
    *,
    seed: int,
    depth: int,
    walks: int | None,
    strategy: str = "uniform",
    should_stop: Callable[[], bool] = lambda: False,
) -> SimulationResult[State, Label]:
    """Seeded random simulation until a violation or the budget ends.

    ``uniform``: whole walks choosing uniformly among successors, as TLC's simulation mode
    (the seed's runs use traces of at most 100 states); ``swarm``: whole walks with
    ``SwarmPolicy``; ``archive``: short swarm walks restarted from an archive of coarse cells
    (``walks`` then counts rounds).
    """
    return explorers.simulate_randomly(
        explorable(cfg),
        strategy=strategy,
        seed=seed,
        depth=depth,
        walks=walks,
        should_stop=should_stop,
    )


def replay(
    cfg: ZabConfig, *, walk_seed: int, depth: int, policy: PolicyFactory[Label] = uniform_policy
) -> tuple[list[Step[State, Label]], list[str]]:
    """Replay one simulated walk from the walk seed a simulation reported."""
    return explorers.replay(explorable(cfg), walk_seed=walk_seed, depth=depth, policy=policy)


def event_of(label: Label) -> Hashable:
    """What a step does, without what depends on the past: the action, its servers and the
    kind (and epoch or zxid) of the message it processes."""
    m = label.received
    key = None if m is None else (m.mtype, m.mepoch, m.mzxid)
    return (label.action, label.i, label.j, key)


def minimise(cfg: ZabConfig, trace: list[Step[State, Label]]) -> list[Step[State, Label]]:
    """A shorter trace that still breaks an invariant, by causal deletion."""
    return explorers.minimise(explorable(cfg), trace)
