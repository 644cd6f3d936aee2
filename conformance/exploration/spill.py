"""A breadth-first level that spills to disk, as TLC keeps its queue on disk.

Up to ``spill_over`` states stay in memory; past that the level goes to a temporary file of
pickles, ``BATCH`` states a pickle, and is read back a batch at a time. With the search's
fingerprints, memory then holds about 100 bytes per seen state instead of the states of a
whole level (the depth-17 level of Bookies=3, WQ=3, AQ=2 alone is ~10 M states, ~22 GB in
memory).
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, Generic, TypeVar

S = TypeVar("S")

#: States kept in memory before a level spills (~2.4 GB of BookKeeper model states).
DEFAULT_SPILL_OVER = 2_000_000

#: States pickled together. One pickle per state cost 36 us a model state (write and read)
#: and 690 bytes; per 256, 4.6 us and 137 bytes, because a batch's pickle shares the
#: sub-records its states share (a parent's unchanged bookies and clients) and the per-call
#: overhead is paid once. By these costs, per-state pickles took about a third of the time of
#: the Defect-1 search without symmetry (benchmarks/profiles/).
BATCH = 256


class SpillingLevel(Generic[S]):
    def __init__(self, spill_over: int = DEFAULT_SPILL_OVER, batch: int = BATCH) -> None:
        if batch < 1:
            raise ValueError(f"batch must be at least 1, not {batch}")
        self._spill_over = spill_over
        self._batch = batch
        self._items: list[tuple[int, S]] = []
        self._file: IO[bytes] | None = None
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def append(self, item: tuple[int, S]) -> None:
        self._count += 1
        items = self._items
        items.append(item)
        if self._file is not None:
            if len(items) >= self._batch:
                self._write(items)
                self._items = []
        elif len(items) > self._spill_over:
            # Lives as long as the level; close() deletes it.
            self._file = tempfile.TemporaryFile(prefix="bkconform-bfs-", suffix=".level")  # noqa: SIM115
            for start in range(0, len(items), self._batch):
                self._write(items[start : start + self._batch])
            self._items = []

    def _write(self, batch: list[tuple[int, S]]) -> None:
        assert self._file is not None
        pickle.dump(batch, self._file, protocol=pickle.HIGHEST_PROTOCOL)

    def __iter__(self) -> Iterator[tuple[int, S]]:
        if self._file is None:
            yield from self._items
            return
        # The states of the last, partial batch are still in memory: they come last.
        self._file.flush()
        self._file.seek(0)
        read = 0
        on_disk = self._count - len(self._items)
        while read < on_disk:
            batch = pickle.load(self._file)
            read += len(batch)
            yield from batch
        yield from self._items

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
