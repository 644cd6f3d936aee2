"""Archive-guided simulation ("go-explore"): restart walks from rarely seen corners.

Plain random walks must survive, in one go, every early step that ends the interesting story
(in BookKeeper: the writer closing its own ledger, or giving up). Here the explorer keeps an
archive of abstract *cells* (a coarse projection of the state chosen by the caller), each with
one state that reached it and the trace that got there. Every round picks a cell uniformly,
walks a few steps from its state with the walk policy, and files every new cell it reaches.
Deep corners are then reached stepwise, each short walk standing on the last one's shoulders.

Which state stands for a cell matters: a cell leaves out details (messages in flight, above
all), so the first state to reach it may be a dead end for the stories that pass through it
(in BookKeeper's Defect 1: the writer's add to the unfenced bookie lost rather than still on
its way). With ``keep_latest`` a cell keeps the latest state that reached it instead, so walks
from a cell start, over time, from many of its states (issue 32, on Defect 1 over 12 seeds:
median 73,000 model steps to the violation instead of about 160,000; one seed in 12 beyond
300,000 instead of two in 10).

Deterministic for a seed (the time budget only decides when to stop), so a finding replays by
running again with the same seed. Pure: the caller supplies ``should_stop``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from model.search.bfs import Step, Violation
from model.search.simulation import PolicyFactory, RoundHook, SimulationResult

S = TypeVar("S", bound=Hashable)
L = TypeVar("L")


def explore_archive(
    init: S,
    successors: Callable[[S], Sequence[tuple[L, S]]],
    check: Callable[[S], list[str]],
    *,
    cell: Callable[[S], Hashable],
    seed: int,
    policy: PolicyFactory[L],
    walk_length: int = 20,
    max_depth: int = 200,
    rounds: int | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    steps_allowed: Callable[[], int] | None = None,
    keep_latest: bool = False,
    on_round: RoundHook | None = None,
) -> SimulationResult[S, L]:
    """Restart short walks from archived cells until a violation, ``rounds``, or ``should_stop``.

    ``steps_allowed``, asked before each round: no new round once the steps taken reach it (a
    portfolio of explorers stops the others at the steps its first finding took: a round
    started may still find a violation a few steps beyond, which the portfolio discards).
    ``keep_latest``: a cell keeps the latest state that reached it, not the first (see the
    module docstring). ``on_round(rounds, steps, cells)``, told before each round (and
    before ``should_stop`` is asked): the counts so far, for a caller's progress reports.
    """
    rng = random.Random(seed)
    first: list[Step[S, L]] = [Step(None, init)]
    broken = check(init)
    if broken:
        return SimulationResult(0, 0, Violation(broken, first), cells=1)
    archive: dict[Hashable, list[Step[S, L]]] = {cell(init): first}
    cells: list[Hashable] = [cell(init)]
    done = 0
    steps = 0
    while rounds is None or done < rounds:
        if on_round is not None:
            on_round(done, steps, len(cells))
        if should_stop() or (steps_allowed is not None and steps >= steps_allowed()):
            break
        trace = archive[cells[rng.randrange(len(cells))]]
        walk_policy = policy(rng)
        state = trace[-1].state
        walked: list[Step[S, L]] = []
        done += 1
        for _ in range(min(walk_length, max_depth - len(trace))):
            options = successors(state)
            if not options:
                break
            label, state = options[walk_policy.choose(rng, [lbl for lbl, _ in options])]
            walked.append(Step(label, state))
            steps += 1
            broken = check(state)
            if broken:
                return SimulationResult(
                    done, steps, Violation(broken, trace + walked), done - 1, seed, len(cells)
                )
            key = cell(state)
            if key not in archive:
                archive[key] = trace + walked
                cells.append(key)
            elif keep_latest:
                archive[key] = trace + walked
    return SimulationResult(done, steps, cells=len(cells), archive=[archive[key] for key in cells])
