"""Exhaustive breadth-first search, as TLC's model checker does it (one worker, no symmetry).

Works on any specification given as an initial state, a successor function and an invariant
check. States must be hashable. Depth is counted as TLC counts it: the initial state is level 1.
On a violation the search stops and returns the shortest trace to it, because breadth-first
order reaches every state first by a shortest path.

Pure: no clock, no randomness, no files. Callers time the search and report rates, and may
supply disk-backed level storage (``new_level``), as TLC keeps its queue on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from model.search.collector import young_collections_only

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


class Level(Protocol[S]):
    """Storage for one BFS level: states are appended, then read back once, in order."""

    def append(self, item: tuple[int, S]) -> None: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[tuple[int, S]]: ...

    def close(self) -> None: ...


class ListLevel(Generic[S]):
    """A level in memory (the default)."""

    def __init__(self) -> None:
        self._items: list[tuple[int, S]] = []

    def append(self, item: tuple[int, S]) -> None:
        self._items.append(item)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[tuple[int, S]]:
        return iter(self._items)

    def close(self) -> None:
        self._items = []


def fingerprint_function(canonical: Canonical[S] | None) -> Callable[[S], int]:
    """A state's fingerprint: the hash of the state, or of its ``canonical`` representative
    under a symmetry."""
    if canonical is None:
        return hash
    key = canonical

    def fingerprint(state: S) -> int:
        return hash(key(state))

    return fingerprint


class BreadthFirst(Protocol):
    """A breadth-first search with ``breadth_first``'s signature: ``breadth_first`` itself, or
    one that spreads the work (``conformance.exploration.parallel_bfs``). Explorers take one, so
    that the model stays free of processes."""

    def __call__(
        self,
        init: S,
        successors: Successors[S, L],
        check: Check[S],
        *,
        canonical: Canonical[S] | None = None,
        max_states: int | None = None,
        max_depth: int | None = None,
        progress: Callable[[Progress], None] | None = None,
        progress_every: int = 100_000,
        new_level: Callable[[], Level[S]] = ...,
    ) -> SearchResult[S, L]: ...


@young_collections_only()
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
    new_level: Callable[[], Level[S]] = ListLevel,
) -> SearchResult[S, L]:
    """Explore every reachable state level by level, checking ``check`` on each new one.

    As TLC does, the set of seen states holds 64-bit fingerprints (Python's hash of the state,
    or of its ``canonical`` representative under a symmetry) and full states are kept only for
    the current and next level; a counterexample is rebuilt by replaying successors along the
    fingerprints of its path. That keeps about 100 bytes per state instead of the state itself.
    Like TLC's, the counts assume no two distinct states share a fingerprint (for N states the
    chance of one collision is about N^2 / 2^65: 1e-6 for 10 million).

    ``max_depth`` bounds the search to the states within that many levels (the initial state
    is level 1); such a search is complete for that horizon only.

    ``new_level`` makes the storage of each level (default: in memory). A caller may keep
    large levels on disk, as TLC keeps its queue (``conformance.exploration.spill``); memory then
    holds only the fingerprints.
    """
    fingerprint = fingerprint_function(canonical)
    root = fingerprint(init)
    parent_of: dict[int, int | None] = {root: None}
    generated = 1

    def result(
        complete: bool, depth: int, violation: Violation[S, L] | None, why: str
    ) -> SearchResult[S, L]:
        return SearchResult(
            distinct_states=len(parent_of),
            depth=depth,
            states_generated=generated,
            complete=complete,
            violation=violation,
            stopped_reason=why,
        )

    broken = check(init)
    if broken:
        return result(False, 1, Violation(broken, [Step(None, init)]), "violation")

    frontier: Level[S] = new_level()
    frontier.append((root, init))
    depth = 1
    next_report = progress_every
    while len(frontier):
        if max_depth is not None and depth >= max_depth:
            frontier.close()
            return result(False, depth, None, f"depth limit {max_depth} reached")
        next_frontier: Level[S] = new_level()
        for parent, state in frontier:
            for _label, succ in successors(state):
                generated += 1
                fp = fingerprint(succ)
                if fp in parent_of:
                    continue
                parent_of[fp] = parent
                next_frontier.append((fp, succ))
                broken = check(succ)
                if broken:
                    frontier.close()
                    next_frontier.close()
                    trace = rebuild_trace(fp, init, parent_of.__getitem__, successors, fingerprint)
                    return result(False, depth + 1, Violation(broken, trace), "violation")
                if max_states is not None and len(parent_of) >= max_states:
                    frontier.close()
                    next_frontier.close()
                    return result(False, depth + 1, None, f"state limit {max_states} reached")
            if progress is not None and len(parent_of) >= next_report:
                next_report += progress_every
                progress(Progress(len(parent_of), depth, len(next_frontier)))
        frontier.close()
        if len(next_frontier):
            depth += 1
        frontier = next_frontier
    return result(True, depth, None, "exhausted")


def rebuild_trace(
    last: int,
    init: S,
    parent_of: Callable[[int], int | None],
    successors: Successors[S, L],
    fingerprint: Callable[[S], int],
) -> list[Step[S, L]]:
    """Rebuild the path to ``last`` by replaying successors along its fingerprints
    (``parent_of`` gives a seen state's parent, None for the initial state)."""
    path: list[int] = []
    node: int | None = last
    while node is not None:
        path.append(node)
        node = parent_of(node)
    path.reverse()
    steps: list[Step[S, L]] = [Step(None, init)]
    state = init
    for target in path[1:]:
        for label, succ in successors(state):
            # Under symmetry the successor may be a permutation of the first-seen state; keep
            # the concrete successor so the trace is a real run.
            if fingerprint(succ) == target:
                steps.append(Step(label, succ))
                state = succ
                break
        else:  # pragma: no cover - a recorded parent always reaches its child
            raise AssertionError("trace reconstruction lost its way")
    return steps
