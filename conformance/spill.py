"""A breadth-first level that spills to disk, as TLC keeps its queue on disk.

Up to ``spill_over`` states stay in memory; past that the level goes to a temporary file of
pickles and is read back one state at a time. With the search's fingerprints, memory then
holds about 100 bytes per seen state instead of the states of a whole level (the depth-17
level of Bookies=3, WQ=3, AQ=2 alone is ~10 M states, ~22 GB in memory).
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, Generic, TypeVar

S = TypeVar("S")

#: States kept in memory before a level spills (~2.4 GB of BookKeeper model states).
DEFAULT_SPILL_OVER = 2_000_000


class SpillingLevel(Generic[S]):
    def __init__(self, spill_over: int = DEFAULT_SPILL_OVER) -> None:
        self._spill_over = spill_over
        self._items: list[tuple[int, S]] = []
        self._file: IO[bytes] | None = None
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def append(self, item: tuple[int, S]) -> None:
        self._count += 1
        if self._file is not None:
            pickle.dump(item, self._file, protocol=pickle.HIGHEST_PROTOCOL)
            return
        self._items.append(item)
        if len(self._items) > self._spill_over:
            # Lives as long as the level; close() deletes it.
            self._file = tempfile.TemporaryFile(prefix="bkconform-bfs-", suffix=".level")  # noqa: SIM115
            for kept in self._items:
                pickle.dump(kept, self._file, protocol=pickle.HIGHEST_PROTOCOL)
            self._items = []

    def __iter__(self) -> Iterator[tuple[int, S]]:
        if self._file is None:
            yield from self._items
            return
        self._file.flush()
        self._file.seek(0)
        for _ in range(self._count):
            yield pickle.load(self._file)

    def close(self) -> None:
        self._items = []
        if self._file is not None:
            self._file.close()
            self._file = None


def spilling(
    spill_over: int = DEFAULT_SPILL_OVER, *, workers: int = 1
) -> Callable[[], SpillingLevel[S]]:
    """A level factory for ``breadth_first(new_level=...)``. With ``workers`` processes each
    keeps its share of ``spill_over`` in memory (each holds two levels at a time, as the single
    process does: the one it reads and the one it writes), so memory does not grow with them."""
    share = max(1, spill_over // workers)
    return lambda: SpillingLevel(share)
