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

A held packet holds its direction of its connection (TCP keeps order, and so does Zab): later
packets wait behind it and go out in order once it is released. A dropped packet is never
forwarded (whole records: the receiver's stream still parses). The forwarded bytes are the
original ones, never re-encoded. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from adapters.loop_thread import (
    LoopThread,
    LoopThreadErrors,
    LoopThreadFacade,
    listen,
    wait_server_closed,
)
from adapters.zkproxy.errors import (
    MalformedPacket,
    NotHeld,
    ZkProxyClosed,
    ZkProxyStartError,
    ZkProxyTimeout,
)
from adapters.zkquorum.packets import Frame, QuorumPacket, QuorumStream

DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_CALL_TIMEOUT = 10.0
_READ_CHUNK = 256 * 1024
_LIMIT = 4 * 1024 * 1024


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


@dataclass
class _Rule:
    rule_id: int
    match: QuorumMatch
    action: Action
    remaining: int | None
    delay_s: float = 0.0
    at_match: AtMatch | None = None


@dataclass(eq=False)
class _Half:
    """One direction of one connection: its writer and what waits to be written (a held
    packet and every packet after it, in order; not empty only while something is held)."""

    writer: asyncio.StreamWriter
    queue: collections.deque[tuple[QuorumRecord, bytes]] = field(default_factory=collections.deque)
    #: Packets held aside (``REORDER``): the stream goes on without them.
    aside: dict[int, tuple[QuorumRecord, bytes]] = field(default_factory=dict)


class QuorumProxyCore:
    """The proxy on the running loop (not thread-safe; :class:`QuorumProxy` is the facade)."""

    def __init__(self, host: str = "127.0.0.1", connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
        self.host = host
        self.connect_timeout = connect_timeout
        self.records: list[QuorumRecord] = []
        self._ids = itertools.count(1)
        self._connections = itertools.count(1)
        self._rules: list[_Rule] = []
        self._rule_ids = itertools.count(1)
        self._servers: list[asyncio.Server] = []
        self._halves: dict[int, _Half] = {}  # by held record id
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._waiters: list[tuple[QuorumMatch, asyncio.Future[QuorumRecord], int]] = []
        #: What ``at_match`` functions raised: (the record, the exception's text).
        self.errors: list[tuple[int, str]] = []

    async def add_link(self, link: QuorumLink, target: tuple[str, int]) -> int:
        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._serve(link, target, reader, writer)

        server = await listen(
            accept, self.host, 0, limit=_LIMIT, error=ZkProxyStartError, who="the quorum proxy"
        )
        self._servers.append(server)
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
        rule = _Rule(next(self._rule_ids), match, action, count, delay_s, at_match)
        self._rules.append(rule)
        return rule.rule_id

    def clear_rules(self) -> None:
        self._rules.clear()

    def release(self, record_id: int) -> None:
        """Send the held packet (and, held in order, what waited behind it)."""
        self._let_go(record_id, "released")

    def discard(self, record_id: int) -> None:
        """Never send the held packet (a server crashed at it); what waited behind it goes."""
        self._let_go(record_id, "discarded")

    def _let_go(self, record_id: int, state: str) -> None:
        half = self._halves.pop(record_id, None)
        if half is not None and record_id in half.aside:
            aside, raw = half.aside.pop(record_id)
            aside.state = state
            if state == "released":
                if half.queue:  # behind what an in-order hold keeps
                    half.queue.append((aside, raw))
                elif not half.writer.is_closing():
                    half.writer.write(raw)
            return
        queued = half.queue if half is not None else ()
        record = next((r for r, _raw in queued if r.record_id == record_id), None)
        if half is None or record is None or record.state != "held":
            raise NotHeld(f"quorum packet #{record_id} is not held")
        record.state = state
        self._flush(half)

    def _release_if_held(self, record_id: int) -> None:
        with contextlib.suppress(NotHeld):
            self.release(record_id)

    def held(self) -> list[QuorumRecord]:
        found = [r for half in self._halves.values() for r, _raw in half.queue]
        found += [r for half in self._halves.values() for r, _raw in half.aside.values()]
        unique = {r.record_id: r for r in found if r.state == "held"}
        return [unique[key] for key in sorted(unique)]

    def wait_for(self, match: QuorumMatch, since: int) -> asyncio.Future[QuorumRecord]:
        future: asyncio.Future[QuorumRecord] = asyncio.get_running_loop().create_future()
        for record in self.records[since:]:
            if match.matches(record.link, record.direction, record.frame):
                future.set_result(record)
                return future
        self._waiters.append((match, future, since))
        return future

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for server in self._servers:
            await wait_server_closed(server)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        # Close every socket now, while the loop still runs (its peers see the end at once).
        for writer in self._writers:
            writer.close()
        closing = [asyncio.ensure_future(writer.wait_closed()) for writer in self._writers]
        if closing:
            await asyncio.wait(closing, timeout=1.0)
            for future in closing:
                if future.done() and not future.cancelled():
                    future.exception()  # a reset peer: already gone, nothing to report
                else:
                    future.cancel()
        self._writers.clear()
        for half in self._halves.values():
            for record, _raw in [*half.queue, *half.aside.values()]:
                if record.state in ("held", "queued"):
                    record.state = "lost"

    # -- one connection ------------------------------------------------------------------------

    async def _serve(
        self,
        link: QuorumLink,
        target: tuple[str, int],
        learner_reader: asyncio.StreamReader,
        learner_writer: asyncio.StreamWriter,
    ) -> None:
        connection = next(self._connections)
        self._writers.add(learner_writer)
        try:
            async with asyncio.timeout(self.connect_timeout):
                leader_reader, leader_writer = await asyncio.open_connection(*target, limit=_LIMIT)
        except (OSError, TimeoutError):
            learner_writer.close()
            return  # the learner sees a refused connection, as without the proxy
        self._writers.add(leader_writer)
        to_leader, to_learner = _Half(leader_writer), _Half(learner_writer)
        pumps = [
            asyncio.create_task(
                self._pump(link, connection, Direction.TO_LEADER, learner_reader, to_leader)
            ),
            asyncio.create_task(
                self._pump(link, connection, Direction.TO_LEARNER, leader_reader, to_learner)
            ),
        ]
        for task in pumps:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in pumps:
                task.cancel()
            for writer in (learner_writer, leader_writer):
                writer.close()
                self._writers.discard(writer)
            for half in (to_leader, to_learner):
                for record, _raw in [*half.queue, *half.aside.values()]:
                    if record.state in ("held", "queued"):
                        record.state = "lost"
                    self._halves.pop(record.record_id, None)
                half.queue.clear()
                half.aside.clear()

    async def _pump(
        self,
        link: QuorumLink,
        connection: int,
        direction: Direction,
        reader: asyncio.StreamReader,
        half: _Half,
    ) -> None:
        stream = QuorumStream()
        while True:
            chunk = await reader.read(_READ_CHUNK)
            if not chunk:
                return
            try:
                frames = stream.feed(chunk)
            except MalformedPacket:
                return  # not quorum traffic we can follow: close, as a broken peer would
            cut = False
            for frame, raw in frames:
                record = QuorumRecord(
                    next(self._ids),
                    link,
                    connection,
                    direction,
                    frame,
                    len(raw),
                    time.monotonic(),
                    raw=raw if isinstance(frame, QuorumPacket) else b"",
                )
                self.records.append(record)
                if cut:  # sent after the cut one: logged, never delivered
                    record.state = "cut"
                else:
                    cut = self._decide(record, raw, half)
                self._notify(record)
            if cut:
                return  # _serve closes both ways
            with contextlib.suppress(ConnectionError):
                await half.writer.drain()

    def _decide(self, record: QuorumRecord, raw: bytes, half: _Half) -> bool:
        """Forward, hold, drop... the packet by the first rule that matches; True when the
        connection is to be cut here."""
        for rule in self._rules:
            if rule.remaining == 0 or not rule.match.matches(
                record.link, record.direction, record.frame
            ):
                continue
            if rule.remaining is not None:
                rule.remaining -= 1
            if rule.at_match is not None:
                try:
                    rule.at_match(record)
                except Exception as exc:  # kept for the caller (errors()); the pump goes on
                    self.errors.append((record.record_id, f"{type(exc).__name__}: {exc}"))
            if rule.action is Action.DROP:
                record.state = "dropped"
                return False
            if rule.action is Action.CUT:
                record.state = "cut"
                return True
            record.state = "held"
            self._halves[record.record_id] = half
            if rule.action is Action.REORDER:
                half.aside[record.record_id] = (record, raw)
                return False
            half.queue.append((record, raw))
            if rule.action is Action.DELAY:
                loop = asyncio.get_running_loop()
                loop.call_later(rule.delay_s, self._release_if_held, record.record_id)
            return False
        if half.queue:
            record.state = "queued"  # behind a held packet: order is kept
            half.queue.append((record, raw))
            return False
        half.writer.write(raw)
        return False

    def _flush(self, half: _Half) -> None:
        """Write what waits at the head of ``half`` up to the next packet still held."""
        while half.queue and half.queue[0][0].state != "held":
            record, raw = half.queue.popleft()
            if record.state == "queued":
                record.state = "forwarded"
            if record.state != "discarded" and not half.writer.is_closing():
                half.writer.write(raw)

    def _notify(self, record: QuorumRecord) -> None:
        still = []
        for match, future, since in self._waiters:
            if future.done():
                continue
            if record.record_id > since and match.matches(
                record.link, record.direction, record.frame
            ):
                future.set_result(record)
            else:
                still.append((match, future, since))
        self._waiters = still


class QuorumProxy(LoopThreadFacade):
    """:class:`QuorumProxyCore` on its own loop thread, from synchronous code."""

    def __init__(
        self, host: str = "127.0.0.1", *, call_timeout: float = DEFAULT_CALL_TIMEOUT
    ) -> None:
        super().__init__(
            LoopThread(
                "zkquorum-loop",
                LoopThreadErrors(ZkProxyClosed, ZkProxyTimeout, ZkProxyStartError),
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
        return self._call(lambda: list(core.errors))

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

        async def wait() -> QuorumRecord:
            future = core.wait_for(match, since)
            try:
                async with asyncio.timeout(timeout):
                    return await future
            except TimeoutError:
                future.cancel()
                raise ZkProxyTimeout(
                    f"no quorum packet matching {match} within {timeout:g} s"
                ) from None

        return self._run(wait(), timeout + self.call_timeout)


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
