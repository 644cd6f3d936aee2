"""The record log of a proxy: every frame as a record with an id, what became of it, the
connections, and bounded waits for a record to come.

Record ids are given by the log, 1, 2, 3... in the order records are added, so a record's id is
its place in the log (``since`` is both an id and a count) and the log is one total order of
what the proxy (or a group of proxies sharing it) saw. The log lives on the proxies' event
loop; the facades hand out copies.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

R = TypeVar("R")
C = TypeVar("C")

#: Whether a record is the one wanted.
Fits = Callable[[R], bool]


@dataclass(frozen=True, slots=True)
class DeliveryRecord:
    """What finally happened to a frame the proxy took: sent (``delivered``) or not, and why
    not (``drop``, ``discarded``, ``connection closed``, ``proxy closed``...)."""

    record_id: int
    at: float
    delivered: bool
    reason: str | None = None

    @property
    def frame_id(self) -> int:
        """The BookKeeper proxy's name for :attr:`record_id`."""
        return self.record_id


class RecordLog(Generic[R, C]):
    """Records (of type ``R``), deliveries, connections (``C``), in arrival order
    (event-loop confined)."""

    def __init__(self) -> None:
        self.records: list[R] = []
        self.deliveries: dict[int, DeliveryRecord] = {}
        self.connections: list[C] = []
        self._record_ids = itertools.count(1)
        self._connection_ids = itertools.count(1)
        self._waiters: list[tuple[Fits[R], int, asyncio.Future[R]]] = []

    def next_connection_id(self) -> int:
        return next(self._connection_ids)

    def add_connection(self, record: C) -> None:
        self.connections.append(record)

    def add(self, make: Callable[[int], R]) -> R:
        """The record ``make`` builds with the next id, appended; waiters it fits wake."""
        record = make(next(self._record_ids))
        self.records.append(record)
        if self._waiters:
            self._wake(len(self.records), record)
        return record

    def add_delivery(self, record: DeliveryRecord) -> None:
        self.deliveries[record.record_id] = record

    @property
    def last_id(self) -> int:
        return len(self.records)

    def records_after(self, since: int, fits: Fits[R] | None = None) -> list[R]:
        """The records after id ``since`` (that ``fits``), oldest first."""
        later = self.records[max(since, 0) :]
        return later if fits is None else [record for record in later if fits(record)]

    def find_record(self, fits: Fits[R], since: int = 0) -> R | None:
        """The first record after id ``since`` that ``fits``."""
        return next((record for record in self.records[max(since, 0) :] if fits(record)), None)

    async def wait_for_record(
        self, fits: Fits[R], *, since: int, timeout: float, timed_out: Callable[[int], Exception]
    ) -> R:
        """:meth:`find_record`, waiting up to ``timeout`` seconds for such a record to arrive; else
        ``timed_out(how many records came after since)`` is raised."""
        found = self.find_record(fits, since)
        if found is not None:
            return found
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        waiter = (fits, since, future)
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise timed_out(len(self.records_after(since))) from None
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def _wake(self, record_id: int, record: R) -> None:
        for fits, since, future in list(self._waiters):
            if not future.done() and record_id > since and fits(record):
                future.set_result(record)


__all__ = ["DeliveryRecord", "Fits", "RecordLog"]
