"""Exhaustive breadth-first search, as TLC's model checker does it (one worker, no symmetry).

Works on any specification given as an initial state, a successor function and an invariant
check. States must be hashable. Depth is counted as TLC counts it: the initial state is level 1.
On a violation the search stops and returns the shortest trace to it, because breadth-first
order reaches every state first by a shortest path.

Pure: no clock and no randomness. Callers time the search and report rates.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

S = TypeVar("S", bound=Hashable)
L = TypeVar("L")

Successors = Callable[[S], Sequence[tuple[L, S]]]
Check = Callable[[S], list[str]]
Canonical = Callable[[S], Hashable]


@dataclass(frozen=True)
class Step(Generic[S, L]):
    """One state of a trace and the label of the step that reached it (None for the first)."""

    label: L | None
    state: S


@dataclass
class Violation(Generic[S, L]):
    invariants: list[str]
    trace: list[Step[S, L]]


@dataclass
class Progress:
    distinct_states: int
    depth: int
    queue: int


@dataclass
class SearchResult(Generic[S, L]):
    distinct_states: int
    depth: int
    states_generated: int
    complete: bool
    violation: Violation[S, L] | None = None
    stopped_reason: str = field(default="")


def breadth_first(
    init: S,
    successors: Successors[S, L],
    check: Check[S],
    *,
    canonical: Canonical[S] | None = None,
    max_states: int | None = None,
    max_depth: int | None = None,
    progress: Callable[[Progress], None] | None = None,
    progress_every: int = 100_000,
) -> SearchResult[S, L]:
    """Explore every reachable state level by level, checking ``check`` on each new one.

    ``max_depth`` bounds the search to the states within that many levels (the initial state
    is level 1); such a search is complete for that horizon only.

    ``canonical`` maps a state to its representative under a symmetry (states with equal
    representatives are explored once), as TLC's SYMMETRY does.
    """
    key: Callable[[S], Hashable] = canonical if canonical is not None else (lambda s: s)
    index: dict[Hashable, int] = {key(init): 0}
    states: list[S] = [init]
    parents: list[int] = [-1]
    generated = 1

    def result(
        complete: bool, depth: int, violation: Violation[S, L] | None, why: str
    ) -> SearchResult[S, L]:
        return SearchResult(
            distinct_states=len(states),
            depth=depth,
            states_generated=generated,
            complete=complete,
            violation=violation,
            stopped_reason=why,
        )

    broken = check(init)
    if broken:
        return result(False, 1, Violation(broken, [Step(None, init)]), "violation")

    frontier = [0]
    depth = 1
    next_report = progress_every
    while frontier:
        if max_depth is not None and depth >= max_depth:
            return result(False, depth, None, f"depth limit {max_depth} reached")
        next_frontier: list[int] = []
        for parent in frontier:
            for _label, succ in successors(states[parent]):
                generated += 1
                k = key(succ)
                if k in index:
                    continue
                index[k] = len(states)
                states.append(succ)
                parents.append(parent)
                next_frontier.append(len(states) - 1)
                broken = check(succ)
                if broken:
                    trace = _trace(len(states) - 1, states, parents, successors, key)
                    return result(False, depth + 1, Violation(broken, trace), "violation")
                if max_states is not None and len(states) >= max_states:
                    return result(False, depth + 1, None, f"state limit {max_states} reached")
            if progress is not None and len(states) >= next_report:
                next_report += progress_every
                progress(Progress(len(states), depth, len(next_frontier)))
        if next_frontier:
            depth += 1
        frontier = next_frontier
    return result(True, depth, None, "exhausted")


def _trace(
    last: int,
    states: list[S],
    parents: list[int],
    successors: Successors[S, L],
    key: Callable[[S], Hashable],
) -> list[Step[S, L]]:
    """Rebuild the path to ``last``; labels are recovered by replaying each parent's steps."""
    path = []
    i = last
    while i != -1:
        path.append(i)
        i = parents[i]
    path.reverse()
    steps: list[Step[S, L]] = [Step(None, states[path[0]])]
    for a, b in itertools.pairwise(path):
        target = key(states[b])
        for label, succ in successors(states[a]):
            if key(succ) == target:
                # Under symmetry the successor may be a permutation of the stored state; keep
                # the concrete successor so the trace is a real run.
                steps.append(Step(label, succ))
                break
        else:  # pragma: no cover - a stored parent always reaches its child
            raise AssertionError("trace reconstruction lost its way")
    return steps
