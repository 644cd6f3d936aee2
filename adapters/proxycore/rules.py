"""Live rules: each a rule of the protocol's own kind (a match and an action), its id, and how
many frames it still applies to; tried in the order added, the first that applies decides."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Rule = TypeVar("Rule")


@dataclass(eq=False)
class LiveRule(Generic[Rule]):
    rule_id: int
    rule: Rule
    #: Frames it still applies to (None: every one).
    remaining: int | None


L = TypeVar("L", bound=LiveRule[Any])  # a protocol's live rule (it may carry more)


class RuleBook(Generic[L]):
    """The live rules of one proxy, in order (event-loop confined)."""

    def __init__(self) -> None:
        self.live: list[L] = []
        self._ids = itertools.count(1)

    def add(self, make: Callable[[int], L]) -> L:
        """The live rule ``make`` builds with the next id, tried after the existing ones."""
        live = make(next(self._ids))
        self.live.append(live)
        return live

    def remove(self, rule_id: int) -> L | None:
        for index, live in enumerate(self.live):
            if live.rule_id == rule_id:
                del self.live[index]
                return live
        return None

    def discard(self, live: L) -> None:
        """Remove ``live`` if it is still here."""
        if live in self.live:
            self.live.remove(live)

    def clear(self) -> list[L]:
        """Remove every rule; returns them."""
        removed, self.live = self.live, []
        return removed

    def listing(self) -> list[tuple[int, Any, int | None]]:
        """``(rule id, rule, frames it still applies to)`` for each live rule, in order."""
        return [(live.rule_id, live.rule, live.remaining) for live in self.live]

    def first(
        self, applies: Callable[[L], bool], *, keep_spent: Callable[[L], bool] | None = None
    ) -> L | None:
        """The first rule that ``applies`` to a frame, counted as applied once: a rule with no
        frames left is removed (unless ``keep_spent`` says it still has frames in hand)."""
        for index, live in enumerate(self.live):
            if applies(live):
                if live.remaining is not None:
                    live.remaining -= 1
                    if live.remaining == 0 and not (keep_spent is not None and keep_spent(live)):
                        del self.live[index]
                return live
        return None


__all__ = ["LiveRule", "RuleBook"]
