"""Random simulation: seeded, depth-bounded walks through a specification's state graph.

Each walk draws its own seed from the run's random generator, so any walk can be replayed
from ``(seed, walk)``. A ``WalkPolicy`` chooses the next step; a good policy makes rare
interleavings likely (see ``model.bookkeeper.swarm``). Pure: the caller passes the random
generator and, for a time budget, a ``should_stop`` predicate.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from model.search.bfs import Step, Violation

S = TypeVar("S", bound=Hashable)
L = TypeVar("L")
L_contra = TypeVar("L_contra", contravariant=True)


class WalkPolicy(Protocol[L_contra]):
    """Chooses one of the enabled steps of a walk (returns its index)."""

    def choose(self, rng: random.Random, labels: Sequence[L_contra]) -> int: ...


PolicyFactory = Callable[[random.Random], WalkPolicy[L]]
#: Told before each walk (or the archive's round): the walks (rounds) done, the steps taken and
#: the cells archived (0 outside the archive); a caller's progress reports, never the search's.
RoundHook = Callable[[int, int, int], None]


class UniformPolicy:
    """Every enabled step equally likely: TLC's own simulation mode."""

    def choose(self, rng: random.Random, labels: Sequence[object]) -> int:
        return rng.randrange(len(labels))


def uniform_policy(_rng: random.Random) -> UniformPolicy:
    return UniformPolicy()


@dataclass
class SimulationResult(Generic[S, L]):
    walks: int
    steps: int
    violation: Violation[S, L] | None = None
    violating_walk: int | None = None
    violating_walk_seed: int | None = None
    cells: int | None = None  # archive-guided exploration only
    #: Archive-guided exploration only: the trace that first reached each cell, in order.
    archive: list[list[Step[S, L]]] | None = None


def walk(
    init: S,
    successors: Callable[[S], Sequence[tuple[L, S]]],
    check: Callable[[S], list[str]],
    policy: WalkPolicy[L],
    rng: random.Random,
    depth: int,
) -> tuple[list[Step[S, L]], list[str]]:
    """One walk of at most ``depth`` states; returns its trace and the invariants it broke."""
    trace: list[Step[S, L]] = [Step(None, init)]
    broken = check(init)
    state = init
    while not broken and len(trace) < depth:
        options = successors(state)
        if not options:
            break  # a deadlock (or the end of the protocol): this walk is over
        label, state = options[policy.choose(rng, [label for label, _ in options])]
        trace.append(Step(label, state))
        broken = check(state)
    return trace, broken


def simulate(
    init: S,
    successors: Callable[[S], Sequence[tuple[L, S]]],
    check: Callable[[S], list[str]],
    *,
    seed: int,
    depth: int,
    walks: int | None,
    policy: PolicyFactory[L],
    should_stop: Callable[[], bool] = lambda: False,
    on_walk: RoundHook | None = None,
) -> SimulationResult[S, L]:
    """Run walks until one violates an invariant, ``walks`` are done, or ``should_stop()``
    (``on_walk(walks, steps, 0)``: the counts, told before each walk)."""
    master = random.Random(seed)
    done = 0
    steps = 0
    while walks is None or done < walks:
        if on_walk is not None:
            on_walk(done, steps, 0)
        if should_stop():
            break
        walk_seed = master.getrandbits(64)
        rng = random.Random(walk_seed)
        trace, broken = walk(init, successors, check, policy(rng), rng, depth)
        done += 1
        steps += len(trace) - 1
        if broken:
            return SimulationResult(done, steps, Violation(broken, trace), done - 1, walk_seed)
    return SimulationResult(done, steps)


def replay_walk(
    init: S,
    successors: Callable[[S], Sequence[tuple[L, S]]],
    check: Callable[[S], list[str]],
    *,
    walk_seed: int,
    depth: int,
    policy: PolicyFactory[L],
) -> tuple[list[Step[S, L]], list[str]]:
    """Replay one walk from its seed (as reported in ``SimulationResult``)."""
    rng = random.Random(walk_seed)
    return walk(init, successors, check, policy(rng), rng, depth)
