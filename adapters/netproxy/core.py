"""The asyncio proxy for ONE bookie: listen, forward frame by frame, apply rules, log.

Listening, connections, the pumps, live rules and the log's waits are
:mod:`adapters.proxycore`'s; this module is what BookKeeper adds: its frames' codec and
describer, the actions of :mod:`.policy` (each frame scheduled on its own, below), forged
answers, and the connection faults.

Every method here runs on the proxy's event loop (not thread-safe); :mod:`.group` runs proxies
on a background loop and gives synchronous code a thread-safe facade with bounded waits.

Each frame is scheduled on its own: a delayed or held frame does not block the frames behind
it on the same connection (BookKeeper matches v3 responses by txnId, so a message-level
network may reorder them; v2 responses are matched by ids). The forwarded bytes are the
original frame's, never re-encoded; only a :class:`~.policy.Forge` makes new bytes (an answer
with another status, :mod:`.forge`), and both the original and the forgery are logged.

Besides frames, a proxy acts on connections: it resets them all
(:meth:`ProxyCore.reset_connections`), refuses new ones for a while
(:meth:`ProxyCore.refuse_connections`), and stops reading what clients send
(:meth:`ProxyCore.stall`), which fills their send buffers: backpressure.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket
import time
from dataclasses import dataclass, field

from adapters.bookkeeper.errors import FrameTooLarge
from adapters.bookkeeper.framing import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, encode_frame
from adapters.bookkeeper.status import StatusCode
from adapters.netproxy.errors import (
    PROXY_ERRORS,
    InvalidPolicy,
    NotHeld,
    ProxyClosed,
    ProxyStartError,
)
from adapters.netproxy.forge import forged_payload, unforgeable
from adapters.netproxy.frames import Direction, FrameDescriber, FrameInfo, describe_response
from adapters.netproxy.log import ConnectionRecord, DeliveryRecord, FrameLog, FrameRecord
from adapters.netproxy.policy import (
    Action,
    Delay,
    Disconnect,
    Drop,
    Forge,
    Forward,
    FrameMatch,
    Hold,
    Reorder,
    Rule,
)
from adapters.proxycore.codec import Codec
from adapters.proxycore.connection import Connection
from adapters.proxycore.pending import Pending
from adapters.proxycore.rules import LiveRule, RuleBook
from adapters.proxycore.server import (
    DEFAULT_CONNECT_TIMEOUT,
    ProxyServer,
    Route,
    Sides,
)

log = logging.getLogger(__name__)

_LISTEN_BACKLOG = 100
_SIDES = Sides("client", "bookie", "bookie")


def frame_codec(max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> Codec[bytes]:
    """BookKeeper frames, for the proxy core: payloads without their length prefix."""
    return Codec(lambda: FrameDecoder(max_frame_size), (FrameTooLarge,), "frame length")


class _Connection(Connection):
    """One client connection, its upstream connection to the bookie, and its describer."""

    def __init__(
        self, connection_id: int, proxy: str, client: asyncio.StreamWriter, peer: str
    ) -> None:
        self.record = ConnectionRecord(connection_id, proxy, peer, time.monotonic())
        super().__init__(connection_id, client, self.record)
        self.proxy = proxy
        self.describer = FrameDescriber()


#: A frame not yet sent (delayed or held).
_Pending = Pending[FrameRecord, _Connection]


@dataclass(eq=False)
class _LiveRule(LiveRule[Rule]):
    """A rule, and for a Reorder the frames it has collected so far."""

    batch: list[_Pending] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class ProxyCore(ProxyServer[bytes, _Connection]):
    """A TCP proxy in front of one bookie, on the running event loop.

    ::

        core = ProxyCore("b1", "127.0.0.1", 3181, FrameLog())
        await core.start()          # listens on 127.0.0.1:<free port> (core.port)
        core.add_rule(Rule(FrameMatch.request(Operation.READ_ENTRY), Drop()))
        ...
        await core.close()
    """

    def __init__(
        self,
        name: str,
        target_host: str,
        target_port: int,
        frame_log: FrameLog,
        *,
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    ) -> None:
        super().__init__(
            frame_codec(max_frame_size), who=f"proxy {name}",
            errors=PROXY_ERRORS, sides=_SIDES,
            connect_timeout=connect_timeout,
        )  # fmt: skip
        self.name = name
        self.target_host = target_host
        self.target_port = target_port
        self.listen_host = listen_host
        self.max_frame_size = max_frame_size
        self.log = frame_log
        self._route = Route(target_host, target_port)
        self._listen_port = listen_port
        self._server: asyncio.Server | None = None
        self._rules: RuleBook[_LiveRule] = RuleBook()
        self._held: dict[int, _Pending] = {}
        self._delayed: dict[int, _Pending] = {}
        self._port: int | None = None
        # Refusing connections: the listening socket is closed and a bound, non-listening
        # placeholder keeps its address (so the port stays ours and connects are refused).
        self._listen_family = socket.AF_INET
        self._listen_sockaddr: tuple[str, int] | tuple[str, int, int, int] | None = None
        self._placeholder: socket.socket | None = None
        self._refusing = False
        self._refuse_timer: asyncio.TimerHandle | None = None
        self._stalled = False

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port clients connect to (kept while connections are refused)."""
        if self._port is None or self._closed:
            raise ProxyClosed(f"proxy {self.name} is not listening")
        return self._port

    @property
    def address(self) -> tuple[str, int]:
        return self.listen_host, self.port

    async def start(self) -> None:
        if self._server is not None or self._closed:
            raise ProxyStartError(f"proxy {self.name} was already started")
        self._server = await self._listen(self.listen_host, self._listen_port, self._route)
        listening = self._server.sockets
        self._port = int(listening[0].getsockname()[1])
        if len(listening) == 1:  # an address literal, as every caller here passes
            self._listen_family = socket.AddressFamily(listening[0].family)
            self._listen_sockaddr = listening[0].getsockname()

    def _on_close(self) -> None:
        """Cancel timers; held and delayed frames are not sent."""
        if self._refuse_timer is not None:
            self._refuse_timer.cancel()
            self._refuse_timer = None
        if self._placeholder is not None:
            self._placeholder.close()
            self._placeholder = None
        for pending in [*self._held.values(), *self._delayed.values()]:
            self._cancel(pending, "proxy closed")
        self._held.clear()
        self._delayed.clear()
        self.clear_rules()

    # -- rules ------------------------------------------------------------------------------

    def add_rule(self, rule: Rule) -> int:
        """Install ``rule`` after the existing ones; returns its id (for :meth:`remove_rule`)."""
        if not isinstance(rule, Rule):
            raise InvalidPolicy(f"add_rule takes a Rule, not {rule!r}")
        self._check_open()
        remaining = rule.action.count if isinstance(rule.action, Reorder) else rule.times
        return self._rules.add(lambda rule_id: _LiveRule(rule_id, rule, remaining)).rule_id

    def remove_rule(self, rule_id: int) -> bool:
        """Remove a rule; frames a Reorder rule already holds stay held. False if unknown."""
        live = self._rules.remove(rule_id)
        if live is None:
            return False
        live.cancel_timer()
        return True

    def clear_rules(self) -> None:
        for live in self._rules.clear():
            live.cancel_timer()

    def rules(self) -> list[tuple[int, Rule, int | None]]:
        """``(rule id, rule, frames it still applies to)`` for each live rule, in order."""
        return self._rules.listing()

    # -- held frames ------------------------------------------------------------------------

    def held(self) -> list[FrameRecord]:
        return [pending.record for pending in self._held.values()]

    def release(self, frame_id: int) -> bool:
        """Send a held frame now; False if its connection closed meanwhile (frame lost)."""
        pending = self._take_held(frame_id)
        return self._deliver(pending)

    def release_matching(self, match: FrameMatch) -> list[int]:
        """Send every held frame ``match`` matches, oldest first; returns their frame ids."""
        chosen = [fid for fid, p in self._held.items() if match.matches(p.record.info)]
        for frame_id in chosen:
            self.release(frame_id)
        return chosen

    def discard(self, frame_id: int) -> None:
        """Never send a held frame (it becomes a dropped message)."""
        self._cancel(self._take_held(frame_id), "discarded")

    def forge(self, frame_id: int, status: StatusCode) -> bool:
        """Answer the client with ``status`` in place of a held frame (see :class:`Forge`).

        A held request is never sent to the bookie; a held response is replaced. Returns False
        if the frame's connection closed meanwhile (nothing sent, both logged undelivered).
        :class:`InvalidPolicy` for a frame with no answer to forge or an EOK ``status``; the
        frame then stays held.
        """
        Forge(status)  # validates status the way a rule's action is validated
        pending = self._held.get(frame_id)
        if pending is None:
            raise NotHeld(f"proxy {self.name} holds no frame {frame_id}")
        why = unforgeable(pending.record.info)
        if why is not None:
            raise InvalidPolicy(f"proxy {self.name} cannot forge frame {frame_id}: {why}")
        return self._forge(self._take_held(frame_id), status, None)

    def _take_held(self, frame_id: int) -> _Pending:
        """The held frame, no longer held (nor in a Reorder's batch, nor timed)."""
        pending = self._held.pop(frame_id, None)
        if pending is None:
            raise NotHeld(f"proxy {self.name} holds no frame {frame_id}")
        pending.cancel_timer()
        for live in self._rules.live:
            if pending in live.batch:
                live.batch.remove(pending)
        return pending

    # -- connection faults --------------------------------------------------------------------

    def reset_connections(self) -> int:
        """Reset every open connection of this proxy now, both sides (an RST each way).

        The client reads ECONNRESET and its pending requests fail; frames still held or delayed
        for those connections are lost (released later, they are logged undelivered). Returns
        how many connections were reset. New connections are served as usual.
        """
        self._check_open()
        reset = [c for c in self._connections.values() if not c.closed]
        for connection in reset:
            connection.close("reset by the harness (reset_connections)", reset=True)
        return len(reset)

    @property
    def refusing(self) -> bool:
        return self._refusing

    def refuse_connections(self, seconds: float | None = None) -> None:
        """Refuse new connections (ECONNREFUSED, as from a bookie that is down) for
        ``seconds``, or until :meth:`accept_connections` when None. Open connections go on.

        The listening socket is closed; a bound socket that does not listen keeps the port,
        so no other program can take it and listening resumes on the same address. Calling
        it again while refusing sets a new end.
        """
        self._check_open()
        if seconds is not None and not seconds >= 0:
            raise InvalidPolicy(f"refuse_connections needs seconds >= 0 or None, got {seconds!r}")
        if self._refuse_timer is not None:
            self._refuse_timer.cancel()
            self._refuse_timer = None
        if not self.refusing:
            self._stop_listening()
        if seconds is not None:
            self._refuse_timer = asyncio.get_running_loop().call_later(seconds, self._accept_later)

    async def accept_connections(self) -> None:
        """Listen again on the same address (no-op unless refusing)."""
        self._check_open()
        if self._refuse_timer is not None:
            self._refuse_timer.cancel()
            self._refuse_timer = None
        await self._listen_again()

    @property
    def stalled(self) -> bool:
        return self._stalled

    def stall(self, on: bool = True) -> None:
        """Stop (``on``) or resume reading from the client side of every connection, current
        and new. Frames already read go on; unread bytes stay in the kernel's buffers, which
        fill, then the client's own send buffer grows: its channel becomes unwritable (see
        docs/adapters/netproxy.md). Answers from the bookie still reach the client. A stalled
        proxy notices a client's close only when it reads again, as a stalled peer would.
        """
        self._check_open()
        self._stalled = on
        for connection in self._connections.values():
            if not connection.closed:
                self._apply_stall(connection)

    # -- connections ------------------------------------------------------------------------

    def _new_connection(self, client: asyncio.StreamWriter, peer: str, route: Route) -> _Connection:
        connection = _Connection(self.log.next_connection_id(), self.name, client, peer)
        self.log.add_connection(connection.record)
        return connection

    def _on_accepted(self, connection: _Connection) -> None:
        if self._stalled:
            self._apply_stall(connection)

    def _on_read(self, connection: _Connection, to_server: bool) -> None:
        if to_server and self._stalled:
            # The StreamReader resumes a transport it paused itself once read() drains its
            # buffer, which would undo a stall: pause again before the loop reads.
            connection.client_transport.pause_reading()

    # -- frames -----------------------------------------------------------------------------

    def _on_unit(self, connection: _Connection, to_server: bool, payload: bytes) -> None:
        if to_server:
            info = connection.describer.request(payload)
        else:
            info = connection.describer.response(payload)
        live = self._match(info)
        action: Action = Forward() if live is None else live.rule.action
        record = self.log.add_frame(
            self.name, connection.id, info, len(payload), _decision(action),
            None if live is None else live.rule_id, payload=payload,
        )  # fmt: skip
        # The bytes as they came: the codec hands out the payload, the prefix is its length.
        pending = _Pending(record, encode_frame(payload), connection)
        if isinstance(action, Forward):
            self._deliver(pending)
        elif isinstance(action, Drop):
            self.log.add_delivery(DeliveryRecord(record.frame_id, time.monotonic(), False, "drop"))
        elif isinstance(action, Delay):
            self._delayed[record.frame_id] = pending
            pending.timer = asyncio.get_running_loop().call_later(
                action.seconds, self._deliver_delayed, pending
            )
        elif isinstance(action, Hold):
            self._hold(pending, action.release_after)
        elif isinstance(action, Reorder):
            assert live is not None
            self._collect(live, action, pending)
        elif isinstance(action, Forge):
            self._forge(pending, action.status, record.rule_id)
        else:
            assert isinstance(action, Disconnect)
            self.log.add_delivery(
                DeliveryRecord(record.frame_id, time.monotonic(), False, "disconnect")
            )
            connection.close(f"disconnected by rule {record.rule_id} on {info.describe()}")

    def _match(self, info: FrameInfo) -> _LiveRule | None:
        def applies(live: _LiveRule) -> bool:
            # A Forge rule passes over a frame with nothing to forge: the next rule decides
            # (Forge's docstring).
            action = live.rule.action
            forgeable = not isinstance(action, Forge) or unforgeable(info) is None
            return live.rule.match.matches(info) and forgeable

        # A Reorder rule with no frames left still holds its batch until it flushes.
        return self._rules.first(
            applies, keep_spent=lambda live: isinstance(live.rule.action, Reorder)
        )

    def _hold(self, pending: _Pending, release_after: float | None) -> None:
        self._held[pending.record.frame_id] = pending
        if release_after is not None:
            pending.timer = asyncio.get_running_loop().call_later(
                release_after, self._release_if_held, pending.record.frame_id
            )

    def _release_if_held(self, frame_id: int) -> None:
        if frame_id in self._held:
            self.release(frame_id)

    def _collect(self, live: _LiveRule, action: Reorder, pending: _Pending) -> None:
        self._held[pending.record.frame_id] = pending
        live.batch.append(pending)
        if len(live.batch) == 1 and action.release_after is not None:
            live.timer = asyncio.get_running_loop().call_later(
                action.release_after, self._flush_batch, live, None
            )
        if len(live.batch) == action.count:
            self._flush_batch(live, tuple(action.order))

    def _flush_batch(self, live: _LiveRule, order: tuple[int, ...] | None) -> None:
        live.cancel_timer()
        batch, live.batch = live.batch, []
        self._rules.discard(live)
        chosen = batch if order is None else [batch[index] for index in order]
        for pending in chosen:
            if self._held.pop(pending.record.frame_id, None) is not None:
                self._deliver(pending)

    def _deliver_delayed(self, pending: _Pending) -> None:
        self._delayed.pop(pending.record.frame_id, None)
        self._deliver(pending)

    def _deliver(self, pending: _Pending) -> bool:
        writer = pending.connection.writer(pending.record.info.direction is Direction.REQUEST)
        now = time.monotonic()
        if pending.connection.closed or writer is None or writer.is_closing():
            self.log.add_delivery(
                DeliveryRecord(pending.record.frame_id, now, False, "connection closed")
            )
            return False
        writer.write(pending.raw)
        self.log.add_delivery(DeliveryRecord(pending.record.frame_id, now, True))
        return True

    def _forge(self, pending: _Pending, status: StatusCode, rule_id: int | None) -> bool:
        """Send the client a forged answer with ``status`` instead of ``pending``; log both."""
        original = pending.record
        connection = pending.connection
        client = connection.client
        if connection.closed or client.is_closing():
            self._cancel(pending, "connection closed")
            return False
        payload = forged_payload(original.info, pending.raw[4:], status)
        if original.info.direction is Direction.REQUEST:
            # The bookie will never answer this request: the forgery takes its place in the
            # describer too (its flags, e.g. FENCE_LEDGER, go to the forged answer).
            info = connection.describer.response(payload, protocol=original.info.protocol)
        else:
            assert original.info.protocol is not None  # a forgeable frame decoded
            info = describe_response(payload, original.info.protocol)
            info = dataclasses.replace(info, flags=original.info.flags)
        forged = self.log.add_frame(
            self.name, connection.id, info, len(payload), "forged", rule_id,
            forged_from=original.frame_id, payload=payload,
        )  # fmt: skip
        self._cancel(pending, f"forged {status.name}")
        client.write(encode_frame(payload))
        self.log.add_delivery(DeliveryRecord(forged.frame_id, time.monotonic(), True))
        return True

    def _stop_listening(self) -> None:
        if self._listen_sockaddr is None:
            raise ProxyStartError(
                f"proxy {self.name} listens on several sockets; it cannot refuse connections"
            )
        assert self._server is not None
        self._server.close()  # closes the listening socket only; connections stay open
        placeholder = socket.socket(self._listen_family, socket.SOCK_STREAM)
        try:
            # SO_REUSEADDR on both this and the later listener lets them share the port while
            # this one does not listen; a program without it cannot bind the port meanwhile.
            placeholder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            placeholder.bind(self._listen_sockaddr)
        except OSError as exc:
            placeholder.close()
            log.warning("proxy %s: cannot keep its port while refusing: %s", self.name, exc)
        else:
            self._placeholder = placeholder
        self._refusing = True

    def _accept_later(self) -> None:
        self._refuse_timer = None
        task = asyncio.get_running_loop().create_task(
            self._listen_again_logged(), name=f"netproxy-{self.name}-accept"
        )
        self._track(task)

    async def _listen_again_logged(self) -> None:
        try:
            await self._listen_again()
        except ProxyStartError as exc:
            log.error("%s", exc)

    async def _listen_again(self) -> None:
        if not self._refusing or self._closed:
            return
        assert self._listen_sockaddr is not None
        # Everything up to listen() is synchronous, so two callers cannot both get here.
        placeholder, self._placeholder = self._placeholder, None
        self._refusing = False
        listener = socket.socket(self._listen_family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if self._listen_family == socket.AF_INET6:
                listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            listener.bind(self._listen_sockaddr)
            listener.listen(_LISTEN_BACKLOG)
            listener.setblocking(False)
        except OSError as exc:
            listener.close()
            self._placeholder, self._refusing = placeholder, True  # still refusing
            raise ProxyStartError(
                f"proxy {self.name} cannot listen again on {self._listen_sockaddr}: {exc}"
            ) from exc
        if placeholder is not None:
            placeholder.close()  # the listener holds the port now
        try:
            server = await self._serve(listener, self._route)
        except BaseException:
            listener.close()
            raise
        if self._closed:  # closed while the server started
            server.close()
            return
        self._server = server

    def _apply_stall(self, connection: _Connection) -> None:
        transport = connection.client_transport
        if transport.is_closing():
            return
        if self._stalled:
            transport.pause_reading()
        else:
            transport.resume_reading()

    def _cancel(self, pending: _Pending, reason: str) -> None:
        pending.cancel_timer()
        self.log.add_delivery(
            DeliveryRecord(pending.record.frame_id, time.monotonic(), False, reason)
        )


def _decision(action: Action) -> str:
    if isinstance(action, Delay):
        return f"delay {action.seconds}s"
    if isinstance(action, Forge):
        return f"forge {action.status.name}"
    return type(action).__name__.lower()


__all__ = ["DEFAULT_CONNECT_TIMEOUT", "ProxyCore"]
