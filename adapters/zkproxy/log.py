"""The packet log of a ZooKeeper proxy: packets, what became of them, connections, sessions
and expiries, with bounded waits on it.

Record ids are one sequence for both directions and every connection, so the log is a total
order of what the proxy saw. Times are ``time.monotonic()`` seconds. The log lives on the
proxy's event loop; :mod:`.proxy` hands out copies.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from adapters.proxycore.records import DeliveryRecord, RecordLog
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


class PacketLog(RecordLog[PacketRecord, ConnectionRecord]):
    """Packets, deliveries (of client requests: replies are forwarded as they arrive and have
    no delivery record), connections, sessions and expiries, in arrival order
    (event-loop confined)."""

    def __init__(self) -> None:
        super().__init__()
        self.sessions: list[SessionRecord] = []
        self.expiries: list[ExpiryRecord] = []

    @property
    def packets(self) -> list[PacketRecord]:
        return self.records

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
        return self.add(
            lambda record_id: PacketRecord(
                record_id,
                connection_id,
                time.monotonic(),
                info,
                size,
                decision,
                rule_id,
                behind,
                answers,
            )
        )

    def add_session(self, record: SessionRecord) -> None:
        self.sessions.append(record)

    def add_expiry(self, record: ExpiryRecord) -> None:
        self.expiries.append(record)

    @property
    def last_record_id(self) -> int:
        return self.last_id

    def select(self, match: ZkMatch | None = None, since: int = 0) -> list[PacketRecord]:
        """Every packet after record id ``since`` that ``match`` matches (all: no match)."""
        return self.records_after(since, None if match is None else _fits(match))

    def find(self, match: ZkMatch, since: int = 0) -> PacketRecord | None:
        """The first packet after record id ``since`` that ``match`` matches."""
        return self.find_record(_fits(match), since)

    async def wait_for(self, match: ZkMatch, *, timeout: float, since: int = 0) -> PacketRecord:
        """:meth:`find`, waiting up to ``timeout`` seconds for such a packet to arrive."""

        def timed_out(later: int) -> ZkProxyTimeout:
            return ZkProxyTimeout(
                f"no packet matching {match.describe()} arrived within {timeout}s "
                f"(packets after #{since}: {later})"
            )

        return await self.wait_for_record(
            _fits(match), since=since, timeout=timeout, timed_out=timed_out
        )


def _fits(match: ZkMatch) -> Callable[[PacketRecord], bool]:
    return lambda record: match.matches(record.info)


__all__ = [
    "ConnectionRecord",
    "DeliveryRecord",
    "ExpiryOutcome",
    "ExpiryRecord",
    "PacketLog",
    "PacketRecord",
    "SessionRecord",
]
