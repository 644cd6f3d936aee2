"""The decoded frame log shared by the proxies of one group, with bounded waits on it.

Frame ids are global to the log (one sequence across all the group's proxies), so the log is a
total order of what every proxy saw. Times are ``time.monotonic()`` seconds. The log lives on
the proxies' event loop; :mod:`.group` hands out copies.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass

from adapters.netproxy.errors import ProxyTimeout
from adapters.netproxy.frames import FrameInfo
from adapters.netproxy.policy import FrameMatch


@dataclass(frozen=True, slots=True)
class FrameRecord:
    """One frame as it arrived at a proxy, and what its rules decided."""

    frame_id: int
    proxy: str
    connection_id: int
    at: float
    info: FrameInfo
    size: int
    #: ``forward``, ``drop``, ``delay <s>s``, ``hold``, ``reorder``, ``disconnect``,
    #: ``forge <STATUS>``; ``forged`` for an answer the proxy made up (see ``forged_from``).
    decision: str
    #: The rule that decided (None: no rule matched, forwarded; or a call such as ``forge``).
    rule_id: int | None = None
    #: A forged answer's: the frame it replaces (a response) or answers (a request). That frame
    #: is logged undelivered (reason ``forged <STATUS>``); this one is what the client got.
    forged_from: int | None = None

    def describe(self) -> str:
        return (
            f"#{self.frame_id} {self.proxy} c{self.connection_id} "
            f"{self.info.direction.value} {self.info.describe()} ({self.decision})"
        )


@dataclass(frozen=True, slots=True)
class DeliveryRecord:
    """What finally happened to a frame: sent (``delivered``) or not, and why not.

    Reasons: ``drop``, ``disconnect``, ``discarded``, ``connection closed``, ``proxy closed``,
    ``forged <STATUS>`` (the client got a forged answer instead, logged as its own frame).
    """

    frame_id: int
    at: float
    delivered: bool
    reason: str | None = None


@dataclass(slots=True)
class ConnectionRecord:
    """One client connection through a proxy; ``error`` says why it closed, if abnormally."""

    connection_id: int
    proxy: str
    client: str
    opened_at: float
    closed_at: float | None = None
    error: str | None = None

    def snapshot(self) -> ConnectionRecord:
        return ConnectionRecord(
            self.connection_id, self.proxy, self.client, self.opened_at, self.closed_at, self.error
        )


class FrameLog:
    """Frames, deliveries and connections, in arrival order (event-loop confined)."""

    def __init__(self) -> None:
        self.frames: list[FrameRecord] = []
        self.deliveries: dict[int, DeliveryRecord] = {}
        self.connections: list[ConnectionRecord] = []
        #: Keep every frame's payload (bytes after the length prefix) from now on, in
        #: :attr:`payloads`. Off by default: a search's session logs thousands of entries, and
        #: only a capture of whole frames (``bkconform encodings``) needs the bytes.
        self.keeps_payloads = False
        #: Frame id -> its payload, for the frames logged while :attr:`keeps_payloads` was on.
        self.payloads: dict[int, bytes] = {}
        self._frame_ids = itertools.count(1)
        self._connection_ids = itertools.count(1)
        self._waiters: list[tuple[str | None, FrameMatch, int, asyncio.Future[FrameRecord]]] = []

    def next_connection_id(self) -> int:
        return next(self._connection_ids)

    def add_connection(self, record: ConnectionRecord) -> None:
        self.connections.append(record)

    def add_frame(
        self,
        proxy: str,
        connection_id: int,
        info: FrameInfo,
        size: int,
        decision: str,
        rule_id: int | None,
        *,
        forged_from: int | None = None,
        payload: bytes | None = None,
    ) -> FrameRecord:
        record = FrameRecord(
            next(self._frame_ids), proxy, connection_id, time.monotonic(), info, size, decision,
            rule_id, forged_from,
        )  # fmt: skip
        self.frames.append(record)
        if self.keeps_payloads and payload is not None:
            self.payloads[record.frame_id] = payload
        if self._waiters:
            self._wake(record)
        return record

    def add_delivery(self, record: DeliveryRecord) -> None:
        self.deliveries[record.frame_id] = record

    @property
    def last_frame_id(self) -> int:
        return self.frames[-1].frame_id if self.frames else 0

    def find(
        self, match: FrameMatch, *, proxy: str | None = None, since: int = 0
    ) -> FrameRecord | None:
        """The first frame after frame id ``since`` that ``match`` matches (at ``proxy``)."""
        for record in self.frames:
            if record.frame_id > since and _fits(record, proxy, match):
                return record
        return None

    async def wait_for(
        self, match: FrameMatch, *, timeout: float, proxy: str | None = None, since: int = 0
    ) -> FrameRecord:
        """:meth:`find`, waiting up to ``timeout`` seconds for such a frame to arrive."""
        found = self.find(match, proxy=proxy, since=since)
        if found is not None:
            return found
        future: asyncio.Future[FrameRecord] = asyncio.get_running_loop().create_future()
        waiter = (proxy, match, since, future)
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            where = f" at proxy {proxy}" if proxy else ""
            raise ProxyTimeout(
                f"no frame matching {match} arrived{where} within {timeout}s "
                f"(frames after #{since}: {sum(1 for f in self.frames if f.frame_id > since)})"
            ) from None
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def _wake(self, record: FrameRecord) -> None:
        for proxy, match, since, future in list(self._waiters):
            if not future.done() and record.frame_id > since and _fits(record, proxy, match):
                future.set_result(record)


def _fits(record: FrameRecord, proxy: str | None, match: FrameMatch) -> bool:
    return (proxy is None or record.proxy == proxy) and match.matches(record.info)


__all__ = ["ConnectionRecord", "DeliveryRecord", "FrameLog", "FrameRecord"]
