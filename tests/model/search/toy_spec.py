"""A toy spec for the generic explorers' tests: two counters ``a`` and ``b`` (0 to 3) and a flag
``c`` that nothing reads; ``incA``, ``incB`` and ``toggle`` are its actions, and "not both
counters at 3" its invariant. Swapping the counters is its symmetry."""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence

from model.search.explorable import Explorable

State = tuple[int, int, bool]
TOP = 3


def successors(state: State) -> list[tuple[str, State]]:
    a, b, c = state
    found: list[tuple[str, State]] = [("toggle", (a, b, not c))]
    if a < TOP:
        found.append(("incA", (a + 1, b, c)))
    if b < TOP:
        found.append(("incB", (a, b + 1, c)))
    return found


def check(state: State) -> list[str]:
    return ["NotBothAtTop"] if state[0] == state[1] == TOP else []


class LastEnabled:
    """A swarm policy that always takes the last successor (an increment while one is enabled)."""

    def choose(self, rng: random.Random, labels: Sequence[str]) -> int:
        return len(labels) - 1


def toy(symmetries: list[int] | None = None) -> Explorable[State, str]:
    """The toy spec; ``symmetries`` counts the symmetry keys made (one per search)."""

    def symmetry() -> Callable[[State], Hashable]:
        if symmetries is not None:
            symmetries.append(1)
        return lambda state: (min(state[0], state[1]), max(state[0], state[1]), state[2])

    def cell(state: State) -> Hashable:
        return state[:2]

    return Explorable(
        initial=(0, 0, False),
        successors=successors,
        check=check,
        symmetry=symmetry,
        cell=cell,
        swarm=lambda rng: LastEnabled(),
        event_of=lambda label: label,
    )
