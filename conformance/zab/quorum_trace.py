"""Trace validation of real quorum traffic against the Zab specification (issue 31, Deliver 3).

The quorum proxy (:mod:`adapters.zkquorum.proxy`) logs every packet a learner and its leader
exchange, in the order each one left its sender (one direction of one TCP connection keeps its
order, and a reply is logged after what it answers). Each packet is mapped onto the spec's
message and the action that sends it (:func:`spec_step`; the table is docs/zab-model.md's), and
each sender is held to that action's guards in the published spec (seed 002, every fix on):

- **discovery and synchronisation, per connection** (``ConnectAndFollowerSendCEPOCH``,
  ``LeaderProcessCEPOCH``, ``FollowerProcessNEWEPOCH``, ``LeaderProcessACKEPOCH``,
  ``FollowerProcessNEWLEADER``, ``LeaderProcessACKLD``): CEPOCH, then NEWEPOCH, then ACKEPOCH
  only if that epoch is no lower than the learner's accepted one, then the sync (DIFF/TRUNC/SNAP and
  its PROPOSAL/COMMIT pairs) and NEWLEADER of the same epoch, then the learner's ACKLD of that
  NEWLEADER, and only then COMMITLD (UPTODATE);
- **broadcast** (``LeaderBroadcastPROPOSE``, ``FollowerProcessPROPOSE``,
  ``LeaderProcessACK``/``LeaderTryToCommit``): on one connection, PROPOSALs and COMMITs go in
  zxid order, a COMMIT names a proposal sent on that connection, a learner ACKs only what it was
  proposed; a leader commits a transaction it proposed in its epoch only once a quorum acked it
  (itself and enough learners whose ACK reached it first);
- **proposal consistency** (the spec's ``proposalMsgsLog`` and its ``Integrity``): one zxid,
  one transaction, on every link.

- **server events** (:class:`ServerEvent`, from the run's fault log): a crash is the first half
  of the spec's ``Restart(i)`` (``i`` loses its connections: the leader drops it, or, a leader,
  shuts down and its followers go back to election), a restart its second half (``i`` looks
  for a leader again: ``FollowLeader``/``UpdateLeader`` next, then a new connection from
  CEPOCH). A packet ``i`` sends on a connection it had before a crash, once it has been
  started again, is a step no action allows (a packet it wrote before dying may still be read
  after the crash: only what follows its restart counts).

A sender that breaks a guard took a step the model does not allow: a **divergence**. Two
transactions for one zxid are a broken invariant: a **violation**. Nothing seen is
**undecided**. Packets outside the spec (PING, the forwarded client REQUEST, REVALIDATE, SYNC)
are counted and left alone.

What it does not do (yet): run the model's state machine beside the trace. The hidden steps
(elections, each server's local log) are not observed, so the guards are checked on what the
wire and the fault log show; a held ACK that was released counts for the quorum as if it had
never been held (its delivery time is not logged), which can hide a commit without a quorum but
never invents one.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from dataclasses import dataclass, field

from adapters.zkquorum.packets import PacketType, QuorumPacket, epoch_of, zxid_text
from adapters.zkquorum.proxy import Direction, QuorumLink, QuorumRecord
from conformance.verdict import Verdict

#: Each packet type, the spec's message it stands for and the action that sends it (for an
#: ACK, the one of a proposal; ACKs of NEWLEADER and UPTODATE are told apart by their zxid).
SPEC_MESSAGES: dict[PacketType, tuple[str, str]] = {
    PacketType.FOLLOWERINFO: ("CEPOCH", "ConnectAndFollowerSendCEPOCH"),
    PacketType.LEADERINFO: ("NEWEPOCH", "LeaderProcessCEPOCH"),
    PacketType.ACKEPOCH: ("ACKEPOCH", "FollowerProcessNEWEPOCH"),
    PacketType.DIFF: ("NEWLEADER (sync: DIFF)", "LeaderProcessACKEPOCH"),
    PacketType.TRUNC: ("NEWLEADER (sync: TRUNC)", "LeaderProcessACKEPOCH"),
    PacketType.SNAP: ("NEWLEADER (sync: SNAP)", "LeaderProcessACKEPOCH"),
    PacketType.NEWLEADER: ("NEWLEADER", "LeaderProcessACKEPOCH"),
    PacketType.UPTODATE: ("COMMITLD", "LeaderProcessACKLD"),
    PacketType.PROPOSAL: ("PROPOSE", "LeaderBroadcastPROPOSE"),
    PacketType.ACK: ("ACK", "FollowerProcessPROPOSE"),
    PacketType.COMMIT: ("COMMIT", "LeaderProcessACK"),
}
_SYNCS = frozenset({PacketType.DIFF, PacketType.TRUNC, PacketType.SNAP})
_DELIVERED = frozenset({"forwarded", "released", "queued"})


#: Server events and the spec's action each stands for.
SERVER_EVENTS: dict[str, str] = {
    "crash": "Restart (down: its connections gone)",
    "restart": "Restart (back: LOOKING, then FollowLeader or UpdateLeader)",
}


@dataclass(frozen=True)
class ServerEvent:
    """A server crashed (killed) or started again, at ``time.monotonic()`` (the clock of the
    proxy's records)."""

    at: float
    sid: int
    kind: str

    def __post_init__(self) -> None:
        if self.kind not in SERVER_EVENTS:
            raise ValueError(f"server event {self.kind!r}: one of {', '.join(SERVER_EVENTS)}")


def server_events(events: Iterable[tuple[float, str, str | None]]) -> list[ServerEvent]:
    """The crashes and restarts among a fault log's ``(at, verb, server)`` entries (``kill``
    is a crash; pauses, partitions and heals are not the spec's server events)."""
    kinds = {"kill": "crash", "crash": "crash", "restart": "restart"}
    found = []
    for at, verb, server in events:
        if verb in kinds and server is not None and server.startswith("zk"):
            found.append(ServerEvent(at, int(server.removeprefix("zk")), kinds[verb]))
    return found


@dataclass(frozen=True)
class SpecStep:
    """One packet as the spec's message: which action of which server sent it."""

    record_id: int
    link: QuorumLink
    connection: int
    message: str
    action: str
    zxid: int

    def describe(self) -> str:
        where = f"#{self.record_id} {self.link.describe()}"
        return f"{where} {self.action}: {self.message} {zxid_text(self.zxid)}"


def spec_step(record: QuorumRecord) -> SpecStep | None:
    """The spec's message and action for a packet; None for one outside the spec."""
    frame = record.frame
    if not isinstance(frame, QuorumPacket):
        return None
    try:
        kind = PacketType(frame.type)
    except ValueError:
        return None
    if kind not in SPEC_MESSAGES:
        return None
    message, action = SPEC_MESSAGES[kind]
    if kind is PacketType.ACK and frame.zxid & 0xFFFFFFFF == 0:
        message, action = "ACKLD", "FollowerProcessNEWLEADER"
    return SpecStep(record.record_id, record.link, record.connection, message, action, frame.zxid)


@dataclass
class _Connection:
    """What one learner-leader connection has shown so far."""

    phase: str = "connecting"
    accepted_epoch: int | None = None
    epoch: int | None = None
    newleader_zxid: int | None = None
    ackld_seen: bool = False
    proposed: set[int] = field(default_factory=set)
    last_proposal: int = -1
    last_commit: int = -1


@dataclass
class QuorumTraceReport:
    """The trace's verdict, what was checked, and the findings (each with its packet)."""

    verdict: Verdict
    packets: int = 0
    outside_spec: int = 0
    connections: int = 0
    syncs: int = 0
    proposals: int = 0
    commits: int = 0
    quorum_checked: int = 0
    server_events: int = 0
    divergences: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    note: str = ""

    def summary(self) -> str:
        return (
            f"quorum trace: {self.verdict}; {self.packets} packets ({self.outside_spec} outside "
            f"the spec) on {self.connections} connections, {self.syncs} syncs, "
            f"{self.proposals} proposals, {self.commits} commits, {self.quorum_checked} "
            f"commits checked for a quorum of ACKs, {self.server_events} crashes and restarts"
            + (f"; {self.note}" if self.note else "")
        )


class _Validator:
    def __init__(self, servers: int) -> None:
        self.quorum = servers // 2 + 1
        self.connections: dict[tuple[QuorumLink, int], _Connection] = {}
        #: Per leader, the zxids it proposed in broadcast, and who acked each (delivered).
        self.broadcast: dict[int, set[int]] = collections.defaultdict(set)
        self.acks: dict[tuple[int, int], set[int]] = collections.defaultdict(set)
        self.committed: set[tuple[int, int]] = set()
        self.transactions: dict[int, tuple[object, ...]] = {}
        #: The connections each server had when it last crashed, and whether it has been
        #: started again since.
        self.cut_by_crash: dict[int, set[tuple[QuorumLink, int]]] = {}
        self.restarted: set[int] = set()
        self.report = QuorumTraceReport(Verdict.UNDECIDED)

    def event(self, event: ServerEvent) -> None:
        self.report.server_events += 1
        if event.kind == "crash":
            self.cut_by_crash[event.sid] = {
                key for key in self.connections if event.sid in (key[0].leader, key[0].learner)
            }
            self.restarted.discard(event.sid)
        else:
            self.restarted.add(event.sid)

    def diverge(self, record: QuorumRecord, why: str) -> None:
        self.report.divergences.append(f"{record.describe()}: {why}")

    def feed(self, record: QuorumRecord) -> None:
        frame = record.frame
        if not isinstance(frame, QuorumPacket):
            return  # a snapshot's chunk: part of its SNAP
        self.report.packets += 1
        step = spec_step(record)
        if step is None:
            self.report.outside_spec += 1
            return
        key = (record.link, record.connection)
        if key not in self.connections:
            self.connections[key] = _Connection()
            self.report.connections += 1
        connection = self.connections[key]
        kind = PacketType(frame.type)
        sender = (
            record.link.learner if record.direction is Direction.TO_LEADER else (record.link.leader)
        )
        if sender in self.restarted and key in self.cut_by_crash.get(sender, set()):
            self.diverge(
                record,
                f"zk{sender} sent on a connection of before its crash, after its restart",
            )
        if record.direction is Direction.TO_LEADER:
            self._from_learner(record, frame, kind, connection)
        else:
            self._from_leader(record, frame, kind, connection)

    # -- what a learner sends ----------------------------------------------------------------

    def _from_learner(
        self, record: QuorumRecord, frame: QuorumPacket, kind: PacketType, c: _Connection
    ) -> None:
        if kind is PacketType.FOLLOWERINFO:
            if c.phase != "connecting":
                self.diverge(record, "a second CEPOCH on one connection")
            c.phase, c.accepted_epoch = "cepoch", epoch_of(frame.zxid)
        elif kind is PacketType.ACKEPOCH:
            if c.phase != "newepoch":
                self.diverge(record, f"ACKEPOCH before NEWEPOCH (phase {c.phase})")
            elif (
                c.epoch is not None
                and c.accepted_epoch is not None
                and (c.epoch < c.accepted_epoch)
            ):
                self.diverge(
                    record,
                    f"ACKEPOCH of NEWEPOCH {c.epoch}, below the learner's accepted epoch "
                    f"{c.accepted_epoch}",
                )
            c.phase = "ackepoch"
        elif kind is PacketType.ACK and frame.zxid & 0xFFFFFFFF == 0:
            if c.newleader_zxid is None:
                self.diverge(record, "ACKLD before NEWLEADER")
            elif c.phase == "newleader":
                if frame.zxid != c.newleader_zxid:
                    self.diverge(
                        record,
                        f"ACKLD of {zxid_text(frame.zxid)}, NEWLEADER was "
                        f"{zxid_text(c.newleader_zxid)}",
                    )
                c.ackld_seen = True
        elif kind is PacketType.ACK:
            if frame.zxid not in c.proposed:
                self.diverge(record, "an ACK of a transaction not proposed on this connection")
            elif record.state in _DELIVERED:
                self.acks[(record.link.leader, frame.zxid)].add(record.link.learner)
        else:
            self.diverge(record, f"a learner sent {frame.name}, which only a leader sends")

    # -- what a leader sends -----------------------------------------------------------------

    def _from_leader(
        self, record: QuorumRecord, frame: QuorumPacket, kind: PacketType, c: _Connection
    ) -> None:
        if kind is PacketType.LEADERINFO:
            # Any epoch: a learner that accepted a later one must refuse it (below).
            if c.phase != "cepoch":
                self.diverge(record, f"NEWEPOCH before CEPOCH (phase {c.phase})")
            c.phase, c.epoch = "newepoch", epoch_of(frame.zxid)
        elif kind in _SYNCS:
            if c.phase != "ackepoch":
                self.diverge(record, f"a sync ({frame.name}) before ACKEPOCH (phase {c.phase})")
            c.phase = "sync"
            self.report.syncs += 1
        elif kind is PacketType.NEWLEADER:
            if c.phase != "sync":
                self.diverge(record, f"NEWLEADER outside a sync (phase {c.phase})")
            elif c.epoch is not None and epoch_of(frame.zxid) != c.epoch:
                self.diverge(
                    record, f"NEWLEADER of epoch {epoch_of(frame.zxid)}, NEWEPOCH was {c.epoch}"
                )
            c.phase, c.newleader_zxid = "newleader", frame.zxid
        elif kind is PacketType.UPTODATE:
            if c.phase != "newleader":
                self.diverge(record, f"COMMITLD outside the sync's end (phase {c.phase})")
            elif not c.ackld_seen:
                self.diverge(record, "COMMITLD before the learner's ACKLD reached the leader")
            c.phase = "broadcast"
        elif kind is PacketType.PROPOSAL:
            self._proposal(record, frame, c)
        elif kind is PacketType.COMMIT:
            self._commit(record, frame, c)
        else:
            self.diverge(record, f"a leader sent {frame.name}, which only a learner sends")

    def _proposal(self, record: QuorumRecord, frame: QuorumPacket, c: _Connection) -> None:
        self.report.proposals += 1
        if c.phase not in ("sync", "newleader", "broadcast"):
            self.diverge(record, f"PROPOSE before the sync (phase {c.phase})")
        if frame.zxid <= c.last_proposal:
            self.diverge(record, f"PROPOSE out of zxid order (after {zxid_text(c.last_proposal)})")
        c.last_proposal = max(c.last_proposal, frame.zxid)
        c.proposed.add(frame.zxid)
        header = frame.txn_header()
        meaning = (
            (header.client_id, header.cxid, header.type) if header is not None else (frame.data,)
        )
        known = self.transactions.setdefault(frame.zxid, meaning)
        if known != meaning:
            self.report.violations.append(
                f"{record.describe()}: zxid {zxid_text(frame.zxid)} proposed as two "
                f"transactions ({known} and {meaning})"
            )
        if c.phase == "broadcast" and c.epoch is not None and epoch_of(frame.zxid) == c.epoch:
            self.broadcast[record.link.leader].add(frame.zxid)

    def _commit(self, record: QuorumRecord, frame: QuorumPacket, c: _Connection) -> None:
        self.report.commits += 1
        if frame.zxid not in c.proposed:
            self.diverge(record, "COMMIT of a transaction not proposed on this connection")
        if frame.zxid <= c.last_commit:
            self.diverge(record, f"COMMIT out of zxid order (after {zxid_text(c.last_commit)})")
        c.last_commit = max(c.last_commit, frame.zxid)
        leader = record.link.leader
        first = (leader, frame.zxid) not in self.committed
        self.committed.add((leader, frame.zxid))
        # Only a transaction of the leader's current epoch needs a quorum of ACKs: one of an
        # earlier epoch is committed by the NEWLEADER quorum, with the initial history.
        current = c.epoch is not None and epoch_of(frame.zxid) == c.epoch
        if first and current and frame.zxid in self.broadcast[leader]:
            self.report.quorum_checked += 1
            ackers = self.acks[(leader, frame.zxid)]
            if len(ackers) + 1 < self.quorum:
                self.diverge(
                    record,
                    f"committed with ACKs from {sorted(ackers) or 'no learner'} and "
                    f"itself: less than a quorum of {self.quorum}",
                )

    def finish(self) -> QuorumTraceReport:
        report = self.report
        if report.violations:
            report.verdict = Verdict.VIOLATION
        elif report.divergences:
            report.verdict = Verdict.DIVERGENCE
        elif report.packets - report.outside_spec == 0:
            report.verdict = Verdict.UNDECIDED
            report.note = "no packet of the spec's protocol was seen"
        else:
            report.verdict = Verdict.CLEAN
        return report


def validate(
    records: list[QuorumRecord], servers: int, events: Iterable[ServerEvent] = ()
) -> QuorumTraceReport:
    """Judge the proxy's records of an ensemble of ``servers``, with the servers' crashes and
    restarts in their place by time (see the module docstring)."""
    validator = _Validator(servers)
    pending = sorted(events, key=lambda e: e.at)
    index = 0
    for record in sorted(records, key=lambda r: r.record_id):
        while index < len(pending) and pending[index].at <= record.at:
            validator.event(pending[index])
            index += 1
        validator.feed(record)
    for event in pending[index:]:
        validator.event(event)
    return validator.finish()


__all__ = [
    "SERVER_EVENTS",
    "SPEC_MESSAGES",
    "QuorumTraceReport",
    "ServerEvent",
    "SpecStep",
    "server_events",
    "spec_step",
    "validate",
]
