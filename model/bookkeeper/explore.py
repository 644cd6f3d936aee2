"""The BookKeeper spec bound to the generic explorers (``model.search.explorable``): exhaustive
search and simulation."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from model.bookkeeper.abstraction import progress_cell
from model.bookkeeper.actions import Label, init_state, successors
from model.bookkeeper.config import ConfigError, ModelConfig
from model.bookkeeper.invariants import Invariant, invariants_for, violated
from model.bookkeeper.records import Message, State
from model.bookkeeper.swarm import swarm_policy
from model.bookkeeper.symmetry import canonical_fingerprint
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
from model.search.simulation import PolicyFactory, RoundHook, SimulationResult


def _successors(cfg: ModelConfig) -> Callable[[State], list[tuple[Label, State]]]:
    def step(state: State) -> list[tuple[Label, State]]:
        return [(t.label, t.state) for t in successors(cfg, state)]

    return step


def _check(cfg: ModelConfig, invariants: tuple[Invariant, ...]) -> Callable[[State], list[str]]:
    def check(state: State) -> list[str]:
        return violated(cfg, state, invariants)

    return check


def _symmetry(cfg: ModelConfig) -> Callable[[], Callable[[State], Hashable]]:
    def canonical() -> Callable[[State], Hashable]:
        if cfg.bookie_recovers_limbo:
            raise ConfigError(
                "symmetry treats every client alike; with bookie_recovers_limbo the last client "
                "is the bookies' own, which acts only on limbo: search without symmetry"
            )
        return remembering(lambda state: canonical_fingerprint(cfg, state))

    return canonical


def explorable(
    cfg: ModelConfig, invariants: tuple[Invariant, ...] | None = None
) -> Explorable[State, Label]:
    """The spec under ``cfg`` as the explorers take it, checking ``invariants`` (default: the
    configuration's). An archive cell keeps its latest state, not its first: the first to reach
    a recovery's read phase has often lost the writer's add that Defect 1 needs still in
    flight."""
    return Explorable(
        initial=init_state(cfg),
        successors=_successors(cfg),
        check=_check(cfg, invariants if invariants is not None else invariants_for(cfg)),
        symmetry=_symmetry(cfg),
        cell=progress_cell,
        swarm=swarm_policy,
        event_of=event_of,
        archive_keeps_latest=True,
    )


def check_exhaustively(
    cfg: ModelConfig,
    *,
    symmetry: bool = False,
    max_states: int | None = None,
    max_depth: int | None = None,
    invariants: tuple[Invariant, ...] | None = None,
    progress: Callable[[Progress], None] | None = None,
    new_level: Callable[[], Level[State]] = ListLevel,
    search: BreadthFirst = breadth_first,
) -> SearchResult[State, Label]:
    """Breadth-first search of every reachable state, as TLC does (optionally with symmetry
    reduction over bookies and clients)."""
    return explorers.check_exhaustively(
        explorable(cfg, invariants),
        symmetry=symmetry,
        max_states=max_states,
        max_depth=max_depth,
        progress=progress,
        new_level=new_level,
        search=search,
    )


def simulate_randomly(
    cfg: ModelConfig,
    *,
    seed: int,
    depth: int,
    walks: int | None,
    strategy: str = "archive",
    should_stop: Callable[[], bool] = lambda: False,
    steps_allowed: Callable[[], int] | None = None,
    on_round: RoundHook | None = None,
) -> SimulationResult[State, Label]:
    """Seeded random simulation until a violation or the budget ends.

    Strategies: ``archive`` (default): short swarm walks restarted from an archive of coarse
    cells (``model.search.archive``); ``swarm``: whole walks with the swarm policy;
    ``uniform``: whole walks choosing uniformly among successors, as TLC's simulation does.
    ``walks`` counts rounds for ``archive``; ``steps_allowed``: its step bound
    (:func:`~model.search.archive.explore_archive`); ``on_round(rounds, steps, cells)``: the
    counts so far, told before each round (or walk), for the caller's progress reports.
    """
    return explorers.simulate_randomly(
        explorable(cfg),
        strategy=strategy,
        seed=seed,
        depth=depth,
        walks=walks,
        should_stop=should_stop,
        steps_allowed=steps_allowed,
        on_round=on_round,
    )


def replay(
    cfg: ModelConfig, *, walk_seed: int, depth: int, policy: PolicyFactory[Label] = swarm_policy
) -> tuple[list[Step[State, Label]], list[str]]:
    """Replay one simulated walk from the seed a simulation reported."""
    return explorers.replay(explorable(cfg), walk_seed=walk_seed, depth=depth, policy=policy)


#: Label details that name a choice (kept in an event) rather than a result (left out).
_CHOICE_DETAILS = frozenset({"ensemble", "failed", "first_entry_id", "entry"})


def _message_key(m: Message) -> Hashable:
    entry = getattr(m, "entry", None)
    entry_id = entry.id if entry is not None else getattr(m, "entry_id", None)
    return (m.kind, m.bookie, m.cid, entry_id)


def event_of(label: Label) -> Hashable:
    """What a step does, without the values that depend on the past: the action, the actor,
    the message it processes, its choices, and which of the messages it sends are lost."""
    return (
        label.action,
        label.client,
        label.bookie,
        None if label.received is None else _message_key(label.received),
        tuple(kv for kv in label.detail if kv[0] in _CHOICE_DETAILS),
        tuple((_message_key(m), delivered) for m, delivered in label.sent),
    )


def minimise(cfg: ModelConfig, trace: list[Step[State, Label]]) -> list[Step[State, Label]]:
    """A shorter trace that still breaks an invariant, by causal deletion
    (``model.search.minimise``)."""
    return explorers.minimise(explorable(cfg), trace)
