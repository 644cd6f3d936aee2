"""A proxy on ZooKeeper's quorum traffic: between each learner and each server it may follow,
decoding every packet both ways (:mod:`.packets`), logging it, and holding, delaying,
reordering or dropping the packets a rule matches (:class:`Action`; issue 31). A crash at a
packet: below (``at_match``); or, from the caller, a hold, the crash, then
:meth:`QuorumProxy.discard`.

A three-server ensemble gets six links, one per (learner, leader) pair: each server's
``zoo.cfg`` names the others' quorum port as a port of this proxy
(:class:`~adapters.cluster.zookeeper.ZooKeeperEnsemble` with ``quorum_proxy``), so whichever
server leads, every follower's connection to it passes here. The election port stays direct.

A rule may also call a function the moment it matches, on the proxy's loop thread, before the
packet goes anywhere (``at_match``): a crash *at* a packet (``SIGKILL`` to the server that sent
it, within microseconds of the packet leaving it) is a rule that drops the packet (a packet
its sender died sending is never delivered) and kills its sender there; a restart at a packet
is that crash, then a start by the caller (a start takes seconds: never on the proxy's
thread). A function that raises is kept in :meth:`QuorumProxy.errors`.

Listening, connections, the pumps, live rules, the in-order lanes and the record log's waits
are :mod:`adapters.proxycore`'s; this module is what the quorum adds: its links, its codec
(:class:`~.packets.QuorumStream`), the actions below and ``at_match``.

A held packet holds its direction of its connection (TCP keeps order, and so does Zab): later
packets wait behind it and go out in order once it is released. A dropped packet is never
forwarded (whole records: the receiver's stream still parses). The forwarded bytes are the
original ones, never re-encoded. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
from collections.abc import Callable
from dataclasses import dataclass

from adapters.loop_thread import LoopThread, LoopThreadFacade
from adapters.proxycore.codec import Codec
from adapters.proxycore.connection import Connection
from adapters.proxycore.pending import Lane, Pending
from adapters.proxycore.records import RecordLog
from adapters.proxycore.rules import LiveRule, RuleBook
from adapters.proxycore.server import (
    DEFAULT_CONNECT_TIMEOUT,
    ProxyServer,
    Route,
    Sides,
)
from adapters.zkproxy.errors import (
    PROXY_ERRORS,
    MalformedPacket,
    NotHeld,
    ZkProxyClosed,
    ZkProxyTimeout,
)
from adapters.zkquorum.packets import Frame, QuorumPacket, QuorumStream

DEFAULT_CALL_TIMEOUT = 10.0
_SIDES = Sides("learner", "leader", "server")
#: Quorum frames with the bytes they were made of, a raw snapshot's chunks included.
QUORUM_CODEC: Codec[tuple[Frame, bytes]] = Codec(QuorumStream, (MalformedPacket,), "quorum packet")


class Direction(enum.Enum):
    TO_LEADER = "to-leader"
    TO_LEARNER = "to-learner"


@dataclass(frozen=True)
class QuorumLink:
    """A learner's connections to one server's quorum port (server ids, ``myid``)."""

    learner: int
    leader: int

    def describe(self) -> str:
        return f"zk{self.learner}->zk{self.leader}"


class Action(enum.Enum):
    """What a rule does to the packets it matches: ``HOLD`` until released (its direction of
    its connection waits behind it, in order); ``DELAY`` the same, released by itself after
    the rule's ``delay_s``; ``REORDER`` held aside while the packets after it pass, sent when
    released (out of order); ``DROP`` never sent."""

    HOLD = "hold"
    DELAY = "delay"
    REORDER = "reorder"
    DROP = "drop"
    CUT = "cut"


@dataclass(frozen=True)
class QuorumMatch:
    """Which packets: of these types (None: any packet, snapshot chunks excluded), this way,
    on this link (None: any), of this learner's links (its ``myid``; None: any: a learner's
    traffic whichever server it follows), whose zxid's counter (its low 32 bits) is this
    (None: any; 0 tells the ACK of NEWLEADER from the ACKs of proposals)."""

    types: frozenset[int] | None = None
    direction: Direction | None = None
    link: QuorumLink | None = None
    learner: int | None = None
    zxid_counter: int | None = None

    def matches(self, link: QuorumLink, direction: Direction, frame: Frame) -> bool:
        if not isinstance(frame, QuorumPacket):
            return False
        return (
            (self.types is None or frame.type in self.types)
            and (self.direction is None or self.direction is direction)
            and (self.link is None or self.link == link)
            and (self.learner is None or self.learner == link.learner)
            and (self.zxid_counter is None or frame.zxid & 0xFFFFFFFF == self.zxid_counter)
        )


@dataclass
class QuorumRecord:
    """One frame seen: where, which way, what, when (``time.monotonic``), and its fate:
    ``forwarded``, ``held`` (then ``released`` or ``lost`` when its connection closed first),
    ``queued`` behind a held one, ``dropped``, ``cut`` (its connection closed at it, or after
    it), or ``discarded`` (held, then dropped: a crash at
    this packet)."""

    record_id: int
    link: QuorumLink
    connection: int
    direction: Direction
    frame: Frame
    size: int
    at: float
    state: str = "forwarded"
    #: The packet's bytes as they came (empty for a snapshot chunk: those are not kept).
    raw: bytes = b""

    def describe(self) -> str:
        what = self.frame.describe() if isinstance(self.frame, QuorumPacket) else "snapshot"
        return (
            f"#{self.record_id} {self.link.describe()} {self.direction.value} {what} [{self.state}]"
        )


#: Called on the proxy's loop thread when a rule matches a packet (it must be quick).
AtMatch = Callable[["QuorumRecord"], None]


@dataclass(frozen=True)
class _Rule:
    match: QuorumMatch
    action: Action
    delay_s: float = 0.0
    at_match: AtMatch | None = None


class _Connection(Connection):
    """A learner's connection to a server on one link, and per direction what waits to be
    written: in order behind a held packet (its lane), or held aside (``REORDER``: the
    stream goes on without it)."""

    def __init__(self, connection_id: int, link: QuorumLink, client: asyncio.StreamWriter):
        super().__init__(connection_id, client, None)
        self.link = link
        self.lanes: dict[Direction, Lane[QuorumRecord, _Connection]] = {
            d: Lane() for d in Direction
        }
        self.aside: dict[Direction, dict[int, _Pending]] = {d: {} for d in Direction}
        #: A rule cut it: the packets after the cut one in what was read are never delivered.
        self.cut = False


_Pending = Pending[QuorumRecord, _Connection]


class QuorumProxyCore(ProxyServer[tuple[Frame, bytes], _Connection]):
    """The proxy on the running loop (not thread-safe; :class:`QuorumProxy` is the facade)."""

    def __init__(self, host: str = "127.0.0.1", connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
        super().__init__(
            QUORUM_CODEC, who="the quorum proxy", sides=_SIDES, connect_timeout=connect_timeout,
            errors=PROXY_ERRORS,
            # Drain after every chunk read (a server's quorum traffic is paced by its peer).
            high_water=-1,
        )  # fmt: skip
        self.host = host
        self.log: RecordLog[QuorumRecord, None] = RecordLog()
        self._rules: RuleBook[LiveRule[_Rule]] = RuleBook()
        self._held: dict[int, _Pending] = {}
        #: What ``at_match`` functions raised: (the record, the exception's text).
        self.errors_at_match: list[tuple[int, str]] = []

    @property
    def records(self) -> list[QuorumRecord]:
        return self.log.records

    async def add_link(self, link: QuorumLink, target: tuple[str, int]) -> int:
        server = await self._listen(self.host, 0, Route(target[0], target[1], link))
        port: int = server.sockets[0].getsockname()[1]
        return port

    def add_rule(
        self,
        match: QuorumMatch,
        action: Action,
        count: int | None,
        delay_s: float = 0.0,
        at_match: AtMatch | None = None,
    ) -> int:
        if action is Action.DELAY and not delay_s > 0:
            raise ValueError(f"a delay needs a positive delay_s, got {delay_s}")
        rule = _Rule(match, action, delay_s, at_match)
        return self._rules.add(lambda rule_id: LiveRule(rule_id, rule, count)).rule_id

    def clear_rules(self) -> None:
        self._rules.clear()

    def release(self, record_id: int) -> None:
        """Send the held packet (and, held in order, what waited behind it)."""
        self._let_go(record_id, "released")

    def discard(self, record_id: int) -> None:
        """Never send the held packet (a server crashed at it); what waited behind it goes."""
        self._let_go(record_id, "discarded")

    def _let_go(self, record_id: int, state: str) -> None:
        pending = self._held.pop(record_id, None)
        if pending is None:
            raise NotHeld(f"quorum packet #{record_id} is not held")
        pending.cancel_timer()
        pending.hold = None
        pending.record.state = state
        connection, direction = pending.connection, pending.record.direction
        lane = connection.lanes[direction]
        if connection.aside[direction].pop(record_id, None) is not None:
            if state == "released":
                if lane.must_wait():  # behind what an in-order hold keeps
                    lane.queue.append(pending)
                else:
                    self._write(pending)
            return
        self._flush(lane)

    def _release_if_held(self, record_id: int) -> None:
        with contextlib.suppress(NotHeld):
            self.release(record_id)

    def held(self) -> list[QuorumRecord]:
        return [self._held[key].record for key in sorted(self._held)]

    # -- one connection ------------------------------------------------------------------------

    def _new_connection(self, client: asyncio.StreamWriter, peer: str, route: Route) -> _Connection:
        return _Connection(self.log.next_connection_id(), route.label, client)

    def _on_closed(self, connection: _Connection, lost: str) -> None:
        for direction in Direction:
            waiting = [*connection.lanes[direction].drain(), *connection.aside[direction].values()]
            connection.aside[direction].clear()
            for pending in waiting:
                pending.cancel_timer()
                if pending.record.state in ("held", "queued"):
                    pending.record.state = "lost"
                self._held.pop(pending.record.record_id, None)

    def _on_unit(self, connection: _Connection, to_server: bool, unit: tuple[Frame, bytes]) -> None:
        frame, raw = unit
        direction = Direction.TO_LEADER if to_server else Direction.TO_LEARNER
        record = self.log.add(
            lambda record_id: QuorumRecord(
                record_id,
                connection.link,
                connection.id,
                direction,
                frame,
                len(raw),
                time.monotonic(),
                raw=raw if isinstance(frame, QuorumPacket) else b"",
            )
        )
        if connection.cut:  # sent after the cut one: logged, never delivered
            record.state = "cut"
        else:
            self._decide(_Pending(record, raw, connection))

    def _decide(self, pending: _Pending) -> None:
        """Forward, hold, drop... the packet by the first rule that matches; a cut closes its
        connection."""
        record, connection = pending.record, pending.connection
        lane = connection.lanes[record.direction]
        live = self._rules.first(
            lambda live: live.rule.match.matches(record.link, record.direction, record.frame)
        )
        if live is None:
            if lane.must_wait():
                record.state = "queued"  # behind a held packet: order is kept
                lane.queue.append(pending)
            else:
                self._write(pending)
            return
        rule = live.rule
        if rule.at_match is not None:
            try:
                rule.at_match(record)
            except Exception as exc:  # kept for the caller (errors()); the pump goes on
                self.errors_at_match.append((record.record_id, f"{type(exc).__name__}: {exc}"))
        if rule.action is Action.DROP:
            record.state = "dropped"
            return
        if rule.action is Action.CUT:
            record.state = "cut"
            connection.cut = True
            self._close_connection(connection, f"cut by rule {live.rule_id} at #{record.record_id}")
            return
        record.state = "held"
        pending.hold = rule.action
        self._held[record.record_id] = pending
        if rule.action is Action.REORDER:
            connection.aside[record.direction][record.record_id] = pending
            return
        lane.queue.append(pending)
        if rule.action is Action.DELAY:
            pending.timer = asyncio.get_running_loop().call_later(
                rule.delay_s, self._release_if_held, record.record_id
            )

    def _flush(self, lane: Lane[QuorumRecord, _Connection]) -> None:
        """Write what waits at the head of ``lane`` up to the next packet still held."""
        for pending in lane.ready():
            if pending.record.state == "queued":
                pending.record.state = "forwarded"
            if pending.record.state != "discarded":
                self._write(pending)

    def _write(self, pending: _Pending) -> None:
        writer = pending.connection.writer(pending.record.direction is Direction.TO_LEADER)
        if writer is not None and not writer.is_closing():
            writer.write(pending.raw)


class QuorumProxy(LoopThreadFacade):
    """:class:`QuorumProxyCore` on its own loop thread, from synchronous code."""

    def __init__(
        self, host: str = "127.0.0.1", *, call_timeout: float = DEFAULT_CALL_TIMEOUT
    ) -> None:
        super().__init__(
            LoopThread(
                "zkquorum-loop",
                PROXY_ERRORS,
                "the quorum proxy",
            ),
            call_timeout=call_timeout,
        )
        self.host = host
        self._core: QuorumProxyCore | None = None

    def _open(self) -> None:
        self._core = QuorumProxyCore(self.host)

    async def _close_on_loop(self) -> None:
        if self._core is not None:
            await self._core.close()

    def _require(self) -> QuorumProxyCore:
        if self._core is None:
            raise ZkProxyClosed("the quorum proxy was not started")
        return self._core

    def add_link(self, link: QuorumLink, target: tuple[str, int]) -> int:
        """A port that forwards to ``target`` (a server's quorum port) as ``link``."""
        return self._run(self._require().add_link(link, target))

    def add_rule(
        self,
        match: QuorumMatch,
        action: Action,
        count: int | None = 1,
        *,
        delay_s: float = 0.0,
        at_match: AtMatch | None = None,
    ) -> int:
        """Apply ``action`` to the next ``count`` packets ``match`` matches (None: every one);
        ``delay_s``: a ``DELAY``'s; ``at_match``: called with each matched packet's record on
        the proxy's thread as it matches (a crash at a packet). ValueError for a delay without
        a positive ``delay_s``."""
        core = self._require()
        return self._call(lambda: core.add_rule(match, action, count, delay_s, at_match))

    def errors(self) -> list[tuple[int, str]]:
        """What ``at_match`` functions raised: (record id, the exception)."""
        core = self._require()
        return self._call(lambda: list(core.errors_at_match))

    def clear_rules(self) -> None:
        core = self._require()
        self._call(core.clear_rules)

    def release(self, record_id: int) -> None:
        core = self._require()
        self._call(lambda: core.release(record_id))

    def discard(self, record_id: int) -> None:
        """Never send a held packet: for a crash at a packet, ``wait_for`` the held packet,
        crash the server, then discard it."""
        core = self._require()
        self._call(lambda: core.discard(record_id))

    def held(self) -> list[QuorumRecord]:
        core = self._require()
        return self._call(core.held)

    def records(self, since: int = 0) -> list[QuorumRecord]:
        core = self._require()
        return self._call(lambda: list(core.records[since:]))

    def mark(self) -> int:
        """How many records so far (``since`` for :meth:`wait_for` and :meth:`records`)."""
        core = self._require()
        return self._call(lambda: len(core.records))

    def wait_for(self, match: QuorumMatch, timeout: float, *, since: int = 0) -> QuorumRecord:
        core = self._require()

        def timed_out(later: int) -> ZkProxyTimeout:
            return ZkProxyTimeout(f"no quorum packet matching {match} within {timeout:g} s")

        def fits(record: QuorumRecord) -> bool:
            return match.matches(record.link, record.direction, record.frame)

        wait = core.log.wait_for_record(fits, since=since, timeout=timeout, timed_out=timed_out)
        return self._run(wait, timeout + self.call_timeout)


__all__ = [
    "Action",
    "AtMatch",
    "Direction",
    "QuorumLink",
    "QuorumMatch",
    "QuorumProxy",
    "QuorumProxyCore",
    "QuorumRecord",
]
