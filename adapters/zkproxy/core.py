"""The asyncio proxy between ZooKeeper clients and one ZooKeeper server: listen, forward
packet by packet, hold requests by rule, log, expire sessions, reset connections.

Listening, connections, the pumps, live rules, the in-order lane and the log's waits are
:mod:`adapters.proxycore`'s; this module is what ZooKeeper's client protocol adds: its packets'
codec and conversation, holds with pings that overtake, sessions and their expiry.

Every method here runs on the proxy's event loop (not thread-safe); :mod:`.proxy` runs the
core on a background loop and gives synchronous code a thread-safe facade with bounded waits.

Unlike the bookie proxy (``adapters.netproxy``), a held request holds its connection: the
ZooKeeper server answers a connection's requests in the order it receives them and both the
Java client and kazoo check that replies come in the order they asked (a reply out of order
is a protocol error that costs the connection). So a connection's client-to-server stream is
a queue: while its head is held, later requests wait behind it, logged ``behind #n``, and go
out in arrival order once it is released. Pings are the exception (see
:class:`~adapters.zkproxy.rules.Hold`). Server-to-client packets are never held. The forwarded
bytes are the original packets', never re-encoded.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import cast

from adapters.proxycore.connection import Connection
from adapters.proxycore.pending import Lane, Pending
from adapters.proxycore.records import DeliveryRecord
from adapters.proxycore.rules import LiveRule, RuleBook
from adapters.proxycore.server import (
    DEFAULT_CONNECT_TIMEOUT,
    ProxyServer,
    Route,
    Sides,
)
from adapters.zkproxy.codes import Op
from adapters.zkproxy.conversation import Conversation
from adapters.zkproxy.errors import (
    PROXY_ERRORS,
    InvalidRule,
    NoSession,
    NotHeld,
    ZkProxyClosed,
    ZkProxyStartError,
)
from adapters.zkproxy.expiry import close_session
from adapters.zkproxy.framing import DEFAULT_MAX_PACKET_SIZE, frame, packet_codec
from adapters.zkproxy.log import (
    ConnectionRecord,
    ExpiryRecord,
    PacketLog,
    PacketRecord,
    SessionRecord,
)
from adapters.zkproxy.packets import ConnectRequest, ConnectResponse, PacketInfo
from adapters.zkproxy.rules import Hold, Rule

_SIDES = Sides("client", "server", "ZooKeeper")


class _Connection(Connection):
    """One client connection, its upstream connection, and its requests not sent yet."""

    def __init__(self, connection_id: int, client: asyncio.StreamWriter, peer: str) -> None:
        self.record = ConnectionRecord(connection_id, peer, time.monotonic())
        super().__init__(connection_id, client, self.record)
        self.conversation = Conversation()
        #: Client packets not sent yet, in arrival order; when not empty its head is held.
        self.requests: Lane[PacketRecord, _Connection] = Lane()

    @property
    def session_ids(self) -> set[int]:
        """The session it was granted, or asked to resume before its answer came."""
        found = set()
        if self.record.session_id:
            found.add(self.record.session_id)
        request = self.conversation.connect_request
        if request is not None and request.session_id:
            found.add(request.session_id)
        return found


_Pending = Pending[PacketRecord, _Connection]


def _is_ping(pending: _Pending) -> bool:
    return pending.record.info.op is Op.PING


class ZkProxyCore(ProxyServer[bytes, _Connection]):
    """A TCP proxy in front of one ZooKeeper server, on the running event loop.

    ::

        core = ZkProxyCore("127.0.0.1", 2181, PacketLog())
        await core.start()          # listens on 127.0.0.1:<free port> (core.port)
        core.add_rule(Rule(ZkMatch.request(Op.SET_DATA, path="/ledgers/00/0000/L0007")))
        ...
        await core.close()
    """

    def __init__(
        self,
        target_host: str,
        target_port: int,
        packet_log: PacketLog,
        *,
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        max_packet_size: int = DEFAULT_MAX_PACKET_SIZE,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    ) -> None:
        super().__init__(
            packet_codec(max_packet_size), who="the ZooKeeper proxy",
            errors=PROXY_ERRORS, sides=_SIDES,
            connect_timeout=connect_timeout,
        )  # fmt: skip
        self.target_host = target_host
        self.target_port = target_port
        self.listen_host = listen_host
        self.max_packet_size = max_packet_size
        self.log = packet_log
        self._listen_port = listen_port
        self._rules: RuleBook[LiveRule[Rule]] = RuleBook()
        self._held: dict[int, _Pending] = {}
        #: Sessions being expired, with the reconnection handshakes held meanwhile.
        self._expiring: dict[int, list[int]] = {}

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if not self._servers or not self._servers[0].sockets:
            raise ZkProxyClosed("the ZooKeeper proxy is not listening")
        return int(self._servers[0].sockets[0].getsockname()[1])

    async def start(self) -> None:
        if self._servers or self._closed:
            raise ZkProxyStartError("the ZooKeeper proxy was already started")
        route = Route(self.target_host, self.target_port)
        await self._listen(self.listen_host, self._listen_port, route)

    def _on_close(self) -> None:
        self._rules.clear()

    # -- rules ------------------------------------------------------------------------------

    def add_rule(self, rule: Rule) -> int:
        """Install ``rule`` after the existing ones; returns its id (for :meth:`remove_rule`)."""
        if not isinstance(rule, Rule):
            raise InvalidRule(f"add_rule takes a Rule, not {rule!r}")
        self._check_open()
        return self._rules.add(lambda rule_id: LiveRule(rule_id, rule, rule.times)).rule_id

    def remove_rule(self, rule_id: int) -> bool:
        """Remove a rule (requests it holds stay held); False if there is no such rule."""
        return self._rules.remove(rule_id) is not None

    def clear_rules(self) -> None:
        self._rules.clear()

    def rules(self) -> list[tuple[int, Rule, int | None]]:
        """``(rule id, rule, requests it still applies to)`` for each live rule, in order."""
        return self._rules.listing()

    def _match(self, info: PacketInfo) -> LiveRule[Rule] | None:
        return self._rules.first(lambda live: live.rule.match.matches(info))

    # -- held requests ----------------------------------------------------------------------

    def held(self) -> list[PacketRecord]:
        """The requests held now, oldest first (not those only queued behind them)."""
        return [pending.record for pending in self._held.values()]

    def queued(self) -> list[PacketRecord]:
        """Every client packet not sent yet, held or waiting behind a held one, per
        connection in arrival order."""
        return [p.record for c in self._connections.values() for p in c.requests.queue]

    def release(self, record_id: int) -> list[int]:
        """Release a held request. Returns the record ids this sent, in order: the request
        and the ones queued behind it, up to the next held one; empty if an earlier request
        of its connection is still held (it goes out when that one does).

        :raises NotHeld: the proxy holds no such request (released already, never held, or
            lost with its connection).
        """
        pending = self._held.pop(record_id, None)
        if pending is None:
            raise NotHeld(f"the proxy holds no request #{record_id}")
        pending.cancel_timer()
        pending.hold = None
        return self._flush(pending.connection)

    def release_all(self) -> list[int]:
        """Release every held request, oldest first; returns their record ids."""
        released = list(self._held)
        for record_id in released:
            if record_id in self._held:
                self.release(record_id)
        return released

    def _release_if_held(self, record_id: int) -> None:
        if record_id in self._held:
            self.release(record_id)

    # -- sessions ---------------------------------------------------------------------------

    def session(self, session_id: int | None = None) -> SessionRecord | None:
        """The latest session the server granted through the proxy (with ``session_id``)."""
        for record in reversed(self.log.sessions):
            if session_id is None or record.session_id == session_id:
                return record
        return None

    async def expire(self, session_id: int | None = None, *, timeout: float) -> ExpiryRecord:
        """Expire a session (the latest one by default) on the server, then close the client
        connections on it, so the client learns the expiry when it reconnects.

        While the expiry runs, a client reconnection to that session is held at its handshake
        (decision ``hold for expiry``) and sent once the session is closed, so that it is
        answered "expired": let through, it would take the session back from the proxy's
        connection (the server closes a session's other connection when a client resumes it,
        ``ZooKeeperServer.processConnectRequest``) and the closeSession would never be sent.

        :raises NoSession: the proxy saw no such session granted.
        """
        self._check_open()
        session = self.session(session_id)
        if session is None:
            which = "any session" if session_id is None else f"session 0x{session_id:x}"
            raise NoSession(f"the proxy has not seen the server grant {which}")
        sid = session.session_id
        started = time.monotonic()
        deferred = self._expiring.setdefault(sid, [])
        try:
            outcome = await close_session(
                self.target_host, self.target_port, session, timeout=timeout
            )
            waiting = {self._held[r].connection.id for r in deferred if r in self._held}
            closed = self._close_connections(
                lambda c: sid in c.session_ids and c.id not in waiting,
                f"session 0x{sid:x} expired by the proxy",
            )
        finally:
            for record_id in self._expiring.pop(sid, []):
                if record_id in self._held:
                    self.release(record_id)
        record = ExpiryRecord(sid, started, time.monotonic(), outcome, tuple(closed))
        self.log.add_expiry(record)
        return record

    def reset_connections(self) -> list[int]:
        """Close every open client connection now (both sides): a disconnect, not an
        expiry; the client reconnects and resumes its session. Returns their ids."""
        return self._close_connections(lambda c: True, "reset by the proxy")

    def _close_connections(self, which: Callable[[_Connection], bool], error: str) -> list[int]:
        chosen = [c for c in self._connections.values() if not c.closed and which(c)]
        for connection in chosen:
            self._close_connection(connection, error)
        return [c.id for c in chosen]

    # -- connections ------------------------------------------------------------------------

    def _new_connection(self, client: asyncio.StreamWriter, peer: str, route: Route) -> _Connection:
        connection = _Connection(self.log.next_connection_id(), client, peer)
        self.log.add_connection(connection.record)
        return connection

    def _on_closed(self, connection: _Connection, lost: str) -> None:
        """The requests it still queues are logged as never delivered."""
        now = time.monotonic()
        for pending in connection.requests.drain():
            self._held.pop(pending.record.record_id, None)
            self.log.add_delivery(DeliveryRecord(pending.record.record_id, now, False, lost))

    # -- packets ----------------------------------------------------------------------------

    def _on_unit(self, connection: _Connection, to_server: bool, unit: bytes) -> None:
        if connection.closed:
            return  # the rest of a chunk read before the connection closed
        if to_server:
            self._on_request(connection, unit)
        else:
            self._on_reply(connection, unit)

    def _on_request(self, connection: _Connection, payload: bytes) -> None:
        info = connection.conversation.request(payload)
        hold, rule_id, decision = self._hold_for(info)
        head = connection.requests.head
        behind = None if head is None else head.record.record_id
        overtake = False
        if hold is None and head is not None:
            overtake = info.op is Op.PING and _ping_wait(head) == 0
            decision = f"overtake #{behind}" if overtake else f"behind #{behind}"
        record = self.log.add_packet(
            connection.id, info, len(payload), decision, rule_id=rule_id, behind=behind
        )
        connection.conversation.awaiting_reply(info, record.record_id)
        pending = _Pending(record, frame(payload), connection)
        if hold is None and (head is None or overtake):
            self._send(pending)
            return
        connection.requests.queue.append(pending)
        if hold is not None:
            pending.hold = hold
            self._held[record.record_id] = pending
            if (
                isinstance(info.connect, ConnectRequest)
                and info.connect.session_id in self._expiring
            ):
                self._expiring[info.connect.session_id].append(record.record_id)
            if hold.release_after is not None:
                pending.timer = asyncio.get_running_loop().call_later(
                    hold.release_after, self._release_if_held, record.record_id
                )
        self._schedule_pings(connection)

    def _hold_for(self, info: PacketInfo) -> tuple[Hold | None, int | None, str]:
        """Whether a request is held, by which rule, and the decision to log (``forward`` if
        nothing holds it; the queue may still make it wait)."""
        if isinstance(info.connect, ConnectRequest) and info.connect.session_id in self._expiring:
            return Hold(), None, "hold for expiry"
        live = self._match(info)
        if live is None:
            return None, None, "forward"
        return live.rule.hold, live.rule_id, "hold"

    def _on_reply(self, connection: _Connection, payload: bytes) -> None:
        info, answers = connection.conversation.reply(payload)
        if isinstance(info.connect, ConnectResponse):
            granted = info.connect
            connection.record.session_id = granted.session_id
            if not granted.expired:
                session = SessionRecord(
                    granted.session_id, granted.passwd, granted.timeout_ms,
                    connection.id, time.monotonic(), granted.read_only,
                )  # fmt: skip
                self.log.add_session(session)
        self.log.add_packet(connection.id, info, len(payload), "forward", answers=answers)
        connection.client.write(frame(payload))

    def _send(self, pending: _Pending, note: str | None = None) -> bool:
        connection = pending.connection
        writer = connection.upstream
        now = time.monotonic()
        record_id = pending.record.record_id
        if connection.closed or writer is None or writer.is_closing():
            self.log.add_delivery(DeliveryRecord(record_id, now, False, "connection closed"))
            return False
        writer.write(pending.raw)
        self.log.add_delivery(DeliveryRecord(record_id, now, True, note))
        return True

    def _flush(self, connection: _Connection) -> list[int]:
        """Send the queue's head while it is not held; returns the record ids sent."""
        sent = [p.record.record_id for p in connection.requests.ready() if self._send(p)]
        self._schedule_pings(connection)
        return sent

    def _schedule_pings(self, connection: _Connection) -> None:
        """Give each queued ping its deadline under the hold now at the head: ``ping_wait``
        seconds after the ping arrived, it overtakes."""
        head = connection.requests.head
        if head is None or connection.closed:
            return
        wait = _ping_wait(head)
        if wait is None:
            return
        loop = asyncio.get_running_loop()
        for pending in list(connection.requests.queue):
            if _is_ping(pending) and pending.hold is None and pending.timer is None:
                delay = max(0.0, pending.record.at + wait - time.monotonic())
                pending.timer = loop.call_later(delay, self._overtake, pending)

    def _overtake(self, pending: _Pending) -> None:
        pending.timer = None
        connection = pending.connection
        queue = connection.requests.queue
        if connection.closed or pending not in queue or not queue:
            return
        head = queue[0]
        if head is pending:
            return
        queue.remove(pending)
        self._send(pending, f"overtook #{head.record.record_id}")


def _ping_wait(head: _Pending) -> float | None:
    """How long a ping may wait behind ``head`` (a held request, by the queue's invariant)."""
    return 0.0 if head.hold is None else cast(Hold, head.hold).ping_wait


__all__ = ["DEFAULT_CONNECT_TIMEOUT", "ZkProxyCore"]
