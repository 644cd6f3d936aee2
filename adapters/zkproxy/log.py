"""The packet log of a ZooKeeper proxy: packets, what became of them, connections, sessions
and expiries, with bounded waits on it.

Record ids are one sequence for both directions and every connection, so the log is a total
order of what the proxy saw. Times are ``time.monotonic()`` seconds. The log lives on the
proxy's event loop; :mod:`.proxy` hands out copies.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import time
from dataclasses import dataclass, replace

from adapters.zkproxy.errors import ZkProxyTimeout
from adapters.zkproxy.packets import PacketInfo
from adapters.zkproxy.rules import ZkMatch


@dataclass(frozen=True, slots=True)
class PacketRecord:
    """One packet as it arrived at the proxy, and what the proxy decided about it.

    ``decision``: ``forward`` (sent at once), ``hold`` (a rule holds it), ``hold for
    expiry`` (a reconnection to a session the proxy is expiring), ``behind #n``
    (queued behind the held request ``n`` of its connection), ``overtake #n`` (a ping sent
    ahead of the held request ``n``). What finally happened is its :class:`DeliveryRecord`.
    """

    record_id: int
    connection_id: int
    at: float
    info: PacketInfo
    size: int
    decision: str
    #: The rule that holds it (None: no rule matched).
    rule_id: int | None = None
    #: Requests that arrived while an earlier request of the connection was held: that one.
    behind: int | None = None
    #: Replies: the record id of the request answered (None for watcher events, the
    #: handshake's answer is paired by ``ConnectionRecord``, and unpaired replies).
    answers: int | None = None

    def describe(self) -> str:
        return (
            f"#{self.record_id} c{self.connection_id} {self.info.direction.value} "
            f"{self.info.describe()} ({self.decision})"
        )


@dataclass(frozen=True, slots=True)
class DeliveryRecord:
    """When a client request was finally sent to the server (``delivered``), or why it never
    was (its connection closed, the proxy closed). Replies are forwarded as they arrive and
    have no delivery record."""

    record_id: int
    at: float
    delivered: bool
    reason: str | None = None


@dataclass(slots=True)
class ConnectionRecord:
    """One client connection through the proxy; ``error`` says why it closed, if not cleanly.

    ``session_id`` is the session the server granted on it (0 if it refused an expired
    session; None before its answer).
    """

    connection_id: int
    client: str
    opened_at: float
    closed_at: float | None = None
    error: str | None = None
    session_id: int | None = None

    def snapshot(self) -> ConnectionRecord:
        return replace(self)


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A session the server granted the client on one of its connections (a reconnection to
    the same session is another record with the same ``session_id``)."""

    session_id: int
    passwd: bytes
    timeout_ms: int
    connection_id: int
    at: float
    read_only: bool | None = None


class ExpiryOutcome(enum.Enum):
    """``EXPIRED``: the proxy closed the session on the server. ``ALREADY_EXPIRED``: the
    server no longer knew it (it refused the proxy's reconnection as expired)."""

    EXPIRED = "expired"
    ALREADY_EXPIRED = "already expired"


@dataclass(frozen=True, slots=True)
class ExpiryRecord:
    """One expiry the proxy carried out: when it began and ended, what the server said, and
    the client connections on the session the proxy then closed so that the client learns it
    on reconnecting (the server may have closed one already: it closes a session's connection
    when another connection resumes the session, as the proxy's did)."""

    session_id: int
    started_at: float
    ended_at: float
    outcome: ExpiryOutcome
    closed_connections: tuple[int, ...]


class PacketLog:
    """Packets, deliveries, connections, sessions and expiries, in arrival order
    (event-loop confined)."""

    def __init__(self) -> None:
        self.packets: list[PacketRecord] = []
        self.deliveries: dict[int, DeliveryRecord] = {}
        self.connections: list[ConnectionRecord] = []
        self.sessions: list[SessionRecord] = []
        self.expiries: list[ExpiryRecord] = []
        self._record_ids = itertools.count(1)
        self._connection_ids = itertools.count(1)
        self._waiters: list[tuple[ZkMatch, int, asyncio.Future[PacketRecord]]] = []

    def next_connection_id(self) -> int:
        return next(self._connection_ids)

    def add_connection(self, record: ConnectionRecord) -> None:
        self.connections.append(record)

    def add_packet(
        self,
        connection_id: int,
        info: PacketInfo,
        size: int,
        decision: str,
        *,
        rule_id: int | None = None,
        behind: int | None = None,
        answers: int | None = None,
    ) -> PacketRecord:
        record = PacketRecord(
            next(self._record_ids), connection_id, time.monotonic(), info, size, decision,
            rule_id, behind, answers,
        )  # fmt: skip
        self.packets.append(record)
        if self._waiters:
            self._wake(record)
        return record

    def add_delivery(self, record: DeliveryRecord) -> None:
        self.deliveries[record.record_id] = record

    def add_session(self, record: SessionRecord) -> None:
        self.sessions.append(record)

    def add_expiry(self, record: ExpiryRecord) -> None:
        self.expiries.append(record)

    @property
    def last_record_id(self) -> int:
        return self.packets[-1].record_id if self.packets else 0

    def select(self, match: ZkMatch | None = None, since: int = 0) -> list[PacketRecord]:
        """Every packet after record id ``since`` that ``match`` matches (all: no match)."""
        return [
            record
            for record in self.packets
            if record.record_id > since and (match is None or match.matches(record.info))
        ]

    def find(self, match: ZkMatch, since: int = 0) -> PacketRecord | None:
        """The first packet after record id ``since`` that ``match`` matches."""
        for record in self.packets:
            if record.record_id > since and match.matches(record.info):
                return record
        return None

    async def wait_for(self, match: ZkMatch, *, timeout: float, since: int = 0) -> PacketRecord:
        """:meth:`find`, waiting up to ``timeout`` seconds for such a packet to arrive."""
        found = self.find(match, since)
        if found is not None:
            return found
        future: asyncio.Future[PacketRecord] = asyncio.get_running_loop().create_future()
        waiter = (match, since, future)
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            later = sum(1 for record in self.packets if record.record_id > since)
            raise ZkProxyTimeout(
                f"no packet matching {match.describe()} arrived within {timeout}s "
                f"(packets after #{since}: {later})"
            ) from None
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def _wake(self, record: PacketRecord) -> None:
        for match, since, future in list(self._waiters):
            if not future.done() and record.record_id > since and match.matches(record.info):
                future.set_result(record)


__all__ = [
    "ConnectionRecord",
    "DeliveryRecord",
    "ExpiryOutcome",
    "ExpiryRecord",
    "PacketLog",
    "PacketRecord",
    "SessionRecord",
]
