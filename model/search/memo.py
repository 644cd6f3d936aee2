"""Canonical fingerprints remembered for the states a symmetric search met a moment ago.

Over half the states a breadth-first search generates are a concrete state it generated
shortly before (the same successor of another parent): in the BookKeeper model's Defect-1
search 56% of them. A small memo keyed by the state's hash skips their canonicalisation. It is
keyed by hash as the search without symmetry keys its seen set, assuming as it does that two
states (here, within the memo's window) never share a 64-bit hash. 64Ki entries (a few MB)
catch as many repeats there as a memo of the whole search; the memo is cleared when full.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

S = TypeVar("S", bound=Hashable)

MEMO_SIZE = 1 << 16


def remembering(canonical: Callable[[S], int], size: int | None = None) -> Callable[[S], int]:
    """``canonical``, remembering its last answers (``size``: ``MEMO_SIZE`` by default)."""
    limit = MEMO_SIZE if size is None else size
    memo: dict[int, int] = {}

    def fingerprint(state: S) -> int:
        h = hash(state)
        found = memo.get(h)
        if found is None:
            if len(memo) >= limit:
                memo.clear()
            found = memo[h] = canonical(state)
        return found

    return fingerprint
