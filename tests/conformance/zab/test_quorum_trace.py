"""Trace validation of quorum traffic: every guard on recorded packets (fast), each breaking
of one a finding with its packet, and a trace with nothing of the spec undecided."""

from __future__ import annotations

import re
import struct

import pytest

from adapters.zkquorum.packets import PacketType, QuorumPacket
from adapters.zkquorum.proxy import Direction, QuorumLink, QuorumRecord
from conformance.verdict import Verdict
from conformance.zab.quorum_trace import ServerEvent, server_events, spec_step, validate

ONE, TWO = QuorumLink(1, 3), QuorumLink(2, 3)
EPOCH = 2 << 32
_LEARNER_SENDS = {PacketType.FOLLOWERINFO, PacketType.ACKEPOCH, PacketType.ACK, PacketType.PING}


def _txn(zxid: int, cxid: int = 1) -> bytes:
    """A PROPOSAL's data: a TxnHeader (client id, cxid, zxid, time, type create) and a body."""
    return struct.pack(">qiqqi", 7, cxid, zxid, 0, 1) + b"body"


class Trace:
    def __init__(self) -> None:
        self.records: list[QuorumRecord] = []

    def add(
        self,
        link: QuorumLink,
        kind: PacketType,
        zxid: int,
        *,
        connection: int = 1,
        state: str = "forwarded",
        data: bytes | None = None,
        direction: Direction | None = None,
    ) -> Trace:
        if direction is None:
            direction = Direction.TO_LEADER if kind in _LEARNER_SENDS else Direction.TO_LEARNER
        if kind is PacketType.PROPOSAL and data is None:
            data = _txn(zxid)
        frame = QuorumPacket(kind, zxid, data)
        self.records.append(
            # Record n is logged at time n: server events go between records by time.
            QuorumRecord(
                number := len(self.records) + 1,
                link,
                connection,
                direction,
                frame,
                16,
                float(number),
                state,
            )
        )
        return self

    def join(self, link: QuorumLink, *sync: tuple[PacketType, int], connection: int = 1) -> Trace:
        self.add(link, PacketType.FOLLOWERINFO, 1 << 32, connection=connection)
        self.add(link, PacketType.LEADERINFO, EPOCH, connection=connection)
        self.add(link, PacketType.ACKEPOCH, 5, connection=connection)
        self.add(link, PacketType.DIFF, 5, connection=connection)
        for kind, zxid in sync:
            self.add(link, kind, zxid, connection=connection)
        self.add(link, PacketType.NEWLEADER, EPOCH, connection=connection)
        self.add(link, PacketType.ACK, EPOCH, connection=connection)
        self.add(link, PacketType.UPTODATE, -1, connection=connection)
        return self.add(link, PacketType.ACK, EPOCH, connection=connection)

    def broadcast(self, zxid: int, ackers: tuple[QuorumLink, ...] = (ONE,)) -> Trace:
        for link in (ONE, TWO):
            self.add(link, PacketType.PROPOSAL, zxid)
        for link in ackers:
            self.add(link, PacketType.ACK, zxid)
        for link in (ONE, TWO):
            self.add(link, PacketType.COMMIT, zxid)
        return self


def _clean() -> Trace:
    trace = Trace().join(ONE).join(TWO)
    for counter in range(1, 4):
        trace.broadcast(EPOCH + counter)
    return trace.add(ONE, PacketType.PING, 0)


def test_a_clean_trace_is_clean_with_what_was_checked() -> None:
    report = validate(_clean().records, servers=3)
    assert report.verdict is Verdict.CLEAN, report.divergences + report.violations
    assert (report.connections, report.syncs, report.proposals, report.commits) == (2, 2, 6, 6)
    assert report.quorum_checked == 3 and report.outside_spec == 1
    assert report.summary() == (
        "quorum trace: clean; 32 packets (1 outside the spec) on 2 connections, 2 syncs, "
        "6 proposals, 6 commits, 3 commits checked for a quorum of ACKs, 0 crashes and restarts"
    )


def test_each_packet_names_its_spec_action() -> None:
    records = _clean().records
    named = [spec_step(r) for r in records]
    assert named[0] is not None and named[0].action == "ConnectAndFollowerSendCEPOCH"
    messages = [s.message for s in named if s is not None][:9]
    assert messages == [
        "CEPOCH",
        "NEWEPOCH",
        "ACKEPOCH",
        "NEWLEADER (sync: DIFF)",
        "NEWLEADER",
        "ACKLD",
        "COMMITLD",
        "ACKLD",
        "CEPOCH",
    ]
    assert named[-1] is None  # a PING is outside the spec
    ackld = named[5]
    assert ackld is not None and (ackld.message, ackld.action) == (
        "ACKLD",
        "FollowerProcessNEWLEADER",
    )
    assert "LeaderProcessACK: COMMIT 0x200000003" in [s for s in named if s][-1].describe()


def test_a_commit_without_a_quorum_of_acks_is_a_divergence() -> None:
    trace = Trace().join(ONE).join(TWO).broadcast(EPOCH + 1, ackers=())
    report = validate(trace.records, servers=3)
    assert report.verdict is Verdict.DIVERGENCE
    assert "less than a quorum of 2" in report.divergences[0]
    dropped = Trace().join(ONE).join(TWO)
    dropped.add(ONE, PacketType.PROPOSAL, EPOCH + 1).add(TWO, PacketType.PROPOSAL, EPOCH + 1)
    dropped.add(ONE, PacketType.ACK, EPOCH + 1, state="dropped")  # never reached the leader
    dropped.add(ONE, PacketType.COMMIT, EPOCH + 1)
    assert validate(dropped.records, servers=3).verdict is Verdict.DIVERGENCE
    five = Trace().join(ONE).join(TWO).broadcast(EPOCH + 1, ackers=(ONE,))
    assert validate(five.records, servers=5).verdict is Verdict.DIVERGENCE  # needs 2 learners
    assert validate(five.records, servers=3).verdict is Verdict.CLEAN


def test_out_of_order_and_unproposed_steps_are_divergences() -> None:
    cases = {
        "COMMITLD before the learner's ACKLD reached the leader": Trace()
        .add(ONE, PacketType.FOLLOWERINFO, 1 << 32)
        .add(ONE, PacketType.LEADERINFO, EPOCH)
        .add(ONE, PacketType.ACKEPOCH, 5)
        .add(ONE, PacketType.DIFF, 5)
        .add(ONE, PacketType.NEWLEADER, EPOCH)
        .add(ONE, PacketType.UPTODATE, -1),
        "ACKEPOCH of NEWEPOCH 1, below the learner's accepted epoch 3": Trace()
        .add(ONE, PacketType.FOLLOWERINFO, 3 << 32)
        .add(ONE, PacketType.LEADERINFO, 1 << 32)
        .add(ONE, PacketType.ACKEPOCH, 5),
        "ACKEPOCH before NEWEPOCH": Trace()
        .add(ONE, PacketType.FOLLOWERINFO, 1 << 32)
        .add(ONE, PacketType.ACKEPOCH, 5),
        "a sync (DIFF) before ACKEPOCH": Trace().add(ONE, PacketType.DIFF, 5),
        "NEWLEADER of epoch 3, NEWEPOCH was 2": Trace()
        .add(ONE, PacketType.FOLLOWERINFO, 1 << 32)
        .add(ONE, PacketType.LEADERINFO, EPOCH)
        .add(ONE, PacketType.ACKEPOCH, 5)
        .add(ONE, PacketType.DIFF, 5)
        .add(ONE, PacketType.NEWLEADER, 3 << 32),
        "ACKLD of 0x300000000, NEWLEADER was 0x200000000": Trace()
        .add(ONE, PacketType.FOLLOWERINFO, 1 << 32)
        .add(ONE, PacketType.LEADERINFO, EPOCH)
        .add(ONE, PacketType.ACKEPOCH, 5)
        .add(ONE, PacketType.DIFF, 5)
        .add(ONE, PacketType.NEWLEADER, EPOCH)
        .add(ONE, PacketType.ACK, 3 << 32),
        "PROPOSE out of zxid order": Trace()
        .join(ONE)
        .add(ONE, PacketType.PROPOSAL, EPOCH + 2)
        .add(ONE, PacketType.PROPOSAL, EPOCH + 1),
        "COMMIT of a transaction not proposed on this connection": Trace()
        .join(ONE)
        .add(ONE, PacketType.COMMIT, EPOCH + 1),
        "COMMIT out of zxid order": Trace()
        .join(ONE, (PacketType.PROPOSAL, 6), (PacketType.PROPOSAL, 7))
        .add(ONE, PacketType.COMMIT, 7)
        .add(ONE, PacketType.COMMIT, 6),
        "an ACK of a transaction not proposed on this connection": Trace()
        .join(ONE)
        .add(ONE, PacketType.ACK, 9),
        "a second CEPOCH on one connection": Trace()
        .add(ONE, PacketType.FOLLOWERINFO, 1 << 32)
        .add(ONE, PacketType.FOLLOWERINFO, 1 << 32),
        "PROPOSE before the sync": Trace().add(ONE, PacketType.PROPOSAL, 6),
        "ACKLD before NEWLEADER": Trace().add(ONE, PacketType.ACK, EPOCH),
        "NEWEPOCH before CEPOCH": Trace().add(ONE, PacketType.LEADERINFO, EPOCH),
        "NEWLEADER outside a sync": Trace()
        .add(ONE, PacketType.FOLLOWERINFO, 1 << 32)
        .add(ONE, PacketType.NEWLEADER, EPOCH),
        "COMMITLD outside the sync's end": Trace()
        .add(ONE, PacketType.FOLLOWERINFO, 1 << 32)
        .add(ONE, PacketType.UPTODATE, -1),
        "a learner sent PROPOSAL, which only a leader sends": Trace()
        .join(ONE)
        .add(ONE, PacketType.PROPOSAL, EPOCH + 1, direction=Direction.TO_LEADER),
        "a leader sent ACKEPOCH, which only a learner sends": Trace()
        .join(ONE)
        .add(ONE, PacketType.ACKEPOCH, EPOCH, direction=Direction.TO_LEARNER),
        "COMMIT out of zxid order (after 0x6)": Trace()
        .join(ONE, (PacketType.PROPOSAL, 6))
        .add(ONE, PacketType.COMMIT, 6)
        .add(ONE, PacketType.COMMIT, 6),
    }
    for why, trace in cases.items():
        report = validate(trace.records, servers=3)
        assert report.verdict is Verdict.DIVERGENCE, why
        # The reason, word for word: after the packet, then the end or its detail.
        said = re.compile(rf": {re.escape(why)}( \(|,|$)")
        assert any(said.search(finding) for finding in report.divergences), (
            why,
            report.divergences,
        )


def test_a_sync_after_a_broadcast_on_a_new_connection_is_clean() -> None:
    trace = _clean().join(ONE, (PacketType.PROPOSAL, EPOCH + 4), connection=2)
    assert validate(trace.records, servers=3).verdict is Verdict.CLEAN


def test_an_earlier_epoch_s_proposal_committed_by_the_next_epoch_s_sync_is_clean() -> None:
    # Epoch 2 proposes 0x200000001; no ACK comes (one follower down, the PROPOSAL to the other
    # dropped); the leader restarts in epoch 3 and syncs it with its history: committed by
    # the NEWLEADER quorum, not by ACKs.
    trace = Trace().join(ONE)
    trace.add(ONE, PacketType.PROPOSAL, EPOCH + 1, state="dropped")
    trace.add(ONE, PacketType.FOLLOWERINFO, EPOCH, connection=2)
    trace.add(ONE, PacketType.LEADERINFO, 3 << 32, connection=2)
    trace.add(ONE, PacketType.ACKEPOCH, EPOCH, connection=2)
    trace.add(ONE, PacketType.DIFF, EPOCH + 1, connection=2)
    trace.add(ONE, PacketType.PROPOSAL, EPOCH + 1, connection=2)
    trace.add(ONE, PacketType.COMMIT, EPOCH + 1, connection=2)
    trace.add(ONE, PacketType.NEWLEADER, 3 << 32, connection=2)
    report = validate(trace.records, servers=3)
    assert report.verdict is Verdict.CLEAN, report.divergences
    assert report.quorum_checked == 0


def test_a_learner_that_refuses_an_older_epoch_is_clean() -> None:
    refused = Trace().join(ONE).add(TWO, PacketType.FOLLOWERINFO, 3 << 32)
    refused.add(TWO, PacketType.LEADERINFO, EPOCH)  # the connection ends: no ACKEPOCH
    assert validate(refused.records, servers=3).verdict is Verdict.CLEAN


def test_two_transactions_for_one_zxid_are_a_violation() -> None:
    trace = Trace().join(ONE).join(TWO)
    trace.add(ONE, PacketType.PROPOSAL, EPOCH + 1, data=_txn(EPOCH + 1, cxid=1))
    trace.add(TWO, PacketType.PROPOSAL, EPOCH + 1, data=_txn(EPOCH + 1, cxid=2))
    report = validate(trace.records, servers=3)
    assert report.verdict is Verdict.VIOLATION
    assert "proposed as two transactions" in report.violations[0]


def test_nothing_of_the_spec_is_undecided() -> None:
    assert validate([], servers=3).verdict is Verdict.UNDECIDED
    pings = Trace().add(ONE, PacketType.PING, 0).records
    report = validate(pings, servers=3)
    assert report.verdict is Verdict.UNDECIDED and "no packet of the spec" in report.note


def test_a_server_sends_nothing_on_its_old_connections_once_restarted() -> None:
    trace = Trace().join(ONE).join(TWO)
    crash_at = len(trace.records) + 0.5
    trace.add(ONE, PacketType.ACK, EPOCH)  # written before it died, read after: allowed
    restart_at = len(trace.records) + 0.5
    events = [ServerEvent(crash_at, 1, "crash"), ServerEvent(restart_at, 1, "restart")]
    clean = trace.add(ONE, PacketType.FOLLOWERINFO, 1 << 32, connection=2)  # a new connection
    report = validate(clean.records, servers=3, events=events)
    assert report.verdict is Verdict.CLEAN, report.divergences
    assert report.server_events == 2 and "2 crashes and restarts" in report.summary()
    # The leader's own packets on the old connection are not the restarted server's.
    clean.add(ONE, PacketType.PROPOSAL, EPOCH + 1)
    assert validate(clean.records, servers=3, events=events).verdict is Verdict.CLEAN
    clean.add(ONE, PacketType.ACK, EPOCH + 1)  # zk1, on its connection of before the crash
    report = validate(clean.records, servers=3, events=events)
    assert report.verdict is Verdict.DIVERGENCE
    assert (
        "zk1 sent on a connection of before its crash, after its restart" in (report.divergences[0])
    )
    # Without the restart it is a packet in flight from before the crash: allowed.
    report = validate(clean.records, servers=3, events=events[:1])
    assert report.verdict is Verdict.CLEAN, report.divergences


def test_the_fault_logs_crashes_and_restarts_are_the_server_events() -> None:
    log = [
        (1.0, "kill", "zk2"),
        (2.0, "pause", "zk1"),
        (3.0, "restart", "zk2"),
        (4.0, "isolate", "zk3"),
        (5.0, "kill", None),
    ]
    assert server_events(log) == [ServerEvent(1.0, 2, "crash"), ServerEvent(3.0, 2, "restart")]
    # The ensemble's own lifecycle log says "crash".
    assert server_events([(6.0, "crash", "zk3")]) == [ServerEvent(6.0, 3, "crash")]
    with pytest.raises(ValueError, match="server event 'pause'"):
        ServerEvent(1.0, 1, "pause")


def test_each_learners_ack_counts_once_for_the_quorum_of_five() -> None:
    # Five servers: a quorum is three, the leader and two learners whose ACKs reached it.
    three = QuorumLink(4, 3)
    trace = Trace().join(ONE).join(TWO).join(three)
    for link in (ONE, TWO, three):
        trace.add(link, PacketType.PROPOSAL, EPOCH + 1)
    trace.add(ONE, PacketType.ACK, EPOCH + 1).add(TWO, PacketType.ACK, EPOCH + 1)
    trace.add(ONE, PacketType.COMMIT, EPOCH + 1)
    report = validate(trace.records, servers=5)
    assert report.verdict is Verdict.CLEAN, report.divergences
    assert report.quorum_checked == 1
    short = Trace().join(ONE).join(TWO)
    short.add(ONE, PacketType.PROPOSAL, EPOCH + 1).add(ONE, PacketType.ACK, EPOCH + 1)
    short.add(ONE, PacketType.COMMIT, EPOCH + 1)
    assert "less than a quorum of 3" in validate(short.records, servers=5).divergences[0]


def test_a_sync_s_commits_of_the_current_epoch_need_no_acks_on_that_connection() -> None:
    # A late joiner's DIFF carries transactions of the current epoch the leader committed
    # before (with their quorum, on other connections): no ACK on this one.
    trace = Trace().join(ONE, (PacketType.PROPOSAL, EPOCH + 1), (PacketType.COMMIT, EPOCH + 1))
    report = validate(trace.records, servers=3)
    assert report.verdict is Verdict.CLEAN, report.divergences
    assert report.quorum_checked == 0


def test_one_transaction_is_its_client_its_cxid_and_its_type() -> None:
    # The same transaction sent twice with another time in its header is still one.
    trace = Trace().join(ONE).join(TWO)
    first = _txn(EPOCH + 1)
    later = first[:20] + struct.pack(">q", 99) + first[28:]
    trace.add(ONE, PacketType.PROPOSAL, EPOCH + 1, data=first)
    trace.add(TWO, PacketType.PROPOSAL, EPOCH + 1, data=later)
    assert validate(trace.records, servers=3).verdict is Verdict.CLEAN


def test_server_events_go_before_a_packet_of_the_same_instant_and_after_the_last() -> None:
    trace = Trace().join(ONE)
    last = trace.records[-1].at
    old = Trace().join(ONE)
    old.add(ONE, PacketType.ACK, EPOCH)
    at = old.records[-1].at
    # Restarted at the very instant the packet was logged: the restart comes first.
    events = [ServerEvent(at - 0.5, 1, "crash"), ServerEvent(at, 1, "restart")]
    assert validate(old.records, servers=3, events=events).verdict is Verdict.DIVERGENCE
    # Events after the last packet are counted too.
    late = [ServerEvent(last + 1, 1, "crash"), ServerEvent(last + 2, 1, "restart")]
    assert validate(trace.records, servers=3, events=late).server_events == 2


def test_a_second_crash_ends_the_restart_before_it() -> None:
    # zk1 crashes, restarts, opens a new connection, crashes again: what it wrote on the new
    # connection before dying may still be read (it has not been restarted since).
    trace = Trace().join(ONE)
    events = [ServerEvent(trace.records[-1].at + 0.5, 1, "crash")]
    events.append(ServerEvent(events[0].at + 0.1, 1, "restart"))
    trace.add(ONE, PacketType.FOLLOWERINFO, 1 << 32, connection=2)
    trace.add(ONE, PacketType.LEADERINFO, EPOCH, connection=2)
    events.append(ServerEvent(trace.records[-1].at + 0.5, 1, "crash"))
    trace.add(ONE, PacketType.ACKEPOCH, EPOCH, connection=2)
    report = validate(trace.records, servers=3, events=events)
    assert report.divergences == [] and report.server_events == 3


def test_what_the_spec_allows_is_clean() -> None:
    # A learner that already accepted the leader's epoch acks it (its NEWEPOCH is not older).
    same = Trace().add(ONE, PacketType.FOLLOWERINFO, EPOCH).add(ONE, PacketType.LEADERINFO, EPOCH)
    same.add(ONE, PacketType.ACKEPOCH, 5)
    # A PROPOSAL between NEWLEADER and UPTODATE (the window) is allowed.
    window = Trace().join(ONE)
    window.records = window.records[:-2]  # up to the ACK of NEWLEADER: no UPTODATE yet
    window.add(ONE, PacketType.PROPOSAL, EPOCH + 1)
    # Different transactions for different zxids; a restart of a server never crashed here.
    two = Trace().join(ONE).join(TWO)
    two.add(ONE, PacketType.PROPOSAL, EPOCH + 1, data=_txn(EPOCH + 1, cxid=1))
    two.add(ONE, PacketType.PROPOSAL, EPOCH + 2, data=_txn(EPOCH + 2, cxid=2))
    for trace, events in ((same, []), (window, []), (two, [ServerEvent(0.5, 2, "restart")])):
        report = validate(trace.records, servers=3, events=events)
        assert report.verdict is Verdict.CLEAN, report.divergences + report.violations


def test_a_proposal_sent_twice_on_one_connection_is_a_divergence() -> None:
    trace = Trace().join(ONE).add(ONE, PacketType.PROPOSAL, EPOCH + 1)
    trace.add(ONE, PacketType.PROPOSAL, EPOCH + 1)
    report = validate(trace.records, servers=3)
    assert report.verdict is Verdict.DIVERGENCE
    assert "PROPOSE out of zxid order (after 0x200000001)" in report.divergences[0]


def test_a_proposals_ack_is_named_as_the_spec_s_ack_and_outside_packets_are_counted() -> None:
    trace = _clean().add(ONE, PacketType.PING, 0)
    acks = [spec_step(r) for r in trace.records if r.frame.type == PacketType.ACK]
    broadcast = [a for a in acks if a is not None and a.zxid == EPOCH + 1]
    assert broadcast and all(a.action == "FollowerProcessPROPOSE" for a in broadcast)
    assert validate(trace.records, servers=3).outside_spec == 2
