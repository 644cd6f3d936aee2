"""Causal deletion: shorten a violating trace by removing a step *and everything it caused*.

A shrinker that deletes contiguous runs of choices (Hypothesis's) cannot remove a message's
send without also removing, elsewhere in the trace, its delivery and the answer's receipt. Here
a step is removed and the rest is replayed by each step's *event* (a caller-supplied loose key:
who acts on which message, what is lost), skipping every later step that is no longer enabled:
the consequences of the removed step fall away with it. A candidate is kept when the replay
still breaks an invariant. Pure and deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from model.search.bfs import Step

S = TypeVar("S", bound=Hashable)
L = TypeVar("L")


def replay_events(
    init: S,
    successors: Callable[[S], Sequence[tuple[L, S]]],
    event: Callable[[L], Hashable],
    labels: Sequence[L],
) -> list[Step[S, L]]:
    """Take each label's event where it is enabled (the first match); skip it otherwise."""
    trace: list[Step[S, L]] = [Step(None, init)]
    state = init
    for wanted in labels:
        key = event(wanted)
        for label, successor in successors(state):
            if event(label) == key:
                trace.append(Step(label, successor))
                state = successor
                break
    return trace


def minimise_trace(
    trace: Sequence[Step[S, L]],
    successors: Callable[[S], Sequence[tuple[L, S]]],
    event: Callable[[L], Hashable],
    check: Callable[[S], list[str]],
    *,
    max_replays: int = 5_000,
) -> list[Step[S, L]]:
    """The shortest violating trace found by removing steps one at a time (last first) until
    no single removal helps. The result ends at its first violation."""
    best = _cut_at_violation(list(trace), check)
    replays = 0
    improved = True
    while improved and replays < max_replays:
        improved = False
        labels = [s.label for s in best[1:] if s.label is not None]
        for i in reversed(range(len(labels))):
            replays += 1
            candidate = replay_events(
                best[0].state, successors, event, labels[:i] + labels[i + 1 :]
            )
            candidate = _cut_at_violation(candidate, check)
            if check(candidate[-1].state) and len(candidate) < len(best):
                best = candidate
                improved = True
                break
            if replays >= max_replays:
                break
    return best


def _cut_at_violation(trace: list[Step[S, L]], check: Callable[[S], list[str]]) -> list[Step[S, L]]:
    for index, step in enumerate(trace):
        if check(step.state):
            return trace[: index + 1]
    return trace
