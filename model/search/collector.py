"""Python's garbage collector, tamed for the length of a search.

A breadth-first search keeps millions of states (tuples, which the collector tracks) alive in
its levels, and makes no reference cycles. CPython's full collection walks every tracked object
each time the survivors grow by a quarter, so on a large search it spent more time walking the
levels than generating states (on the Defect-1 configuration without symmetry, 1.5 M states took
59 s with full collections and 36 s without). Young collections stay on: they are cheap and
still free any cycle a successor function makes in passing.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Young collections this far apart (objects allocated): CPython's 700 wakes them every few
#: successors for nothing a search keeps.
YOUNG_THRESHOLD = 10_000
#: A full collection would need this many middle-generation ones: never, within a search.
NEVER = 1 << 30


@contextmanager
def young_collections_only() -> Iterator[None]:
    """No full collections inside the block (or the decorated function); the collector's
    thresholds restored after it."""
    before = gc.get_threshold()
    young = max(before[0], YOUNG_THRESHOLD) if before[0] else 0  # 0: collection is off
    gc.set_threshold(young, before[1], NEVER)
    try:
        yield
    finally:
        gc.set_threshold(*before)
