"""The quorum proxy on plain sockets (no ZooKeeper): what it forwards, holds and drops, in
order, and what it logs."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from adapters.zkproxy.errors import NotHeld
from adapters.zkquorum.packets import PacketType, QuorumPacket
from adapters.zkquorum.proxy import (
    Action,
    Direction,
    QuorumLink,
    QuorumMatch,
    QuorumProxy,
    QuorumRecord,
)

LINK = QuorumLink(learner=2, leader=1)


class _Leader:
    """A listening socket standing in for a leader's quorum port: keeps what it receives."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.received = b""
        self.peer: socket.socket | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.peer, _ = self.server.accept()
        self.peer.settimeout(5)
        while chunk := self.peer.recv(65536):
            self.received += chunk

    def wait_for(self, size: int, timeout: float = 5.0) -> bytes:
        deadline = time.monotonic() + timeout
        while len(self.received) < size and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.received

    def close(self) -> None:
        if self.peer is not None:
            self.peer.close()
        self.server.close()
        self._thread.join(timeout=5)


@pytest.fixture
def leader() -> Iterator[_Leader]:
    stand_in = _Leader()
    yield stand_in
    stand_in.close()


def test_held_packets_keep_order_and_dropped_ones_never_arrive(leader: _Leader) -> None:
    proposal = QuorumPacket(PacketType.PROPOSAL, 0x100000001, b"txn")
    ack = QuorumPacket(PacketType.ACK, 0x100000001)
    ping = QuorumPacket(PacketType.PING, 0x100000001)
    later = QuorumPacket(PacketType.ACK, 0x100000002)
    with QuorumProxy() as proxy:
        port = proxy.add_link(LINK, ("127.0.0.1", leader.port))
        proxy.add_rule(QuorumMatch(frozenset({PacketType.PING})), Action.DROP, count=1)
        hold = QuorumMatch(frozenset({PacketType.ACK}), Direction.TO_LEADER, LINK)
        proxy.add_rule(hold, Action.HOLD, count=1)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as learner:
            learner.sendall(proposal.encode() + ack.encode() + ping.encode() + later.encode())
            held = proxy.wait_for(hold, timeout=5)
            assert leader.wait_for(len(proposal.encode())) == proposal.encode()
            time.sleep(0.2)
            assert leader.received == proposal.encode()  # the ACK held, the later one behind
            assert [r.state for r in proxy.records()] == ["forwarded", "held", "dropped", "queued"]
            assert proxy.held() == [held] and held.frame == ack and held.link == LINK
            proxy.release(held.record_id)
            wanted = proposal.encode() + ack.encode() + later.encode()
            assert leader.wait_for(len(wanted)) == wanted  # the PING dropped, the rest in order
            assert [r.state for r in proxy.records()] == [
                "forwarded",
                "released",
                "dropped",
                "forwarded",
            ]
            with pytest.raises(NotHeld):
                proxy.release(held.record_id)
        assert proxy.records()[0].describe() == (
            "#1 zk2->zk1 to-leader PROPOSAL 0x100000001 [forwarded]"
        )


def _packets(*zxids: int) -> list[QuorumPacket]:
    return [QuorumPacket(PacketType.ACK, zxid) for zxid in zxids]


def test_a_reordered_packet_lets_the_later_ones_pass_and_goes_when_released(
    leader: _Leader,
) -> None:
    first, second, third = _packets(1, 2, 3)
    with QuorumProxy() as proxy:
        port = proxy.add_link(LINK, ("127.0.0.1", leader.port))
        aside = QuorumMatch(frozenset({PacketType.ACK}))
        proxy.add_rule(aside, Action.REORDER, count=1)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as learner:
            learner.sendall(first.encode() + second.encode() + third.encode())
            held = proxy.wait_for(aside, timeout=5)
            passed = second.encode() + third.encode()
            assert leader.wait_for(len(passed)) == passed
            assert held.frame == first and proxy.held() == [held]
            proxy.release(held.record_id)
            assert leader.wait_for(len(passed + first.encode())) == passed + first.encode()
            assert [r.state for r in proxy.records()] == ["released", "forwarded", "forwarded"]


def test_a_delayed_packet_goes_by_itself_and_a_discarded_one_never(leader: _Leader) -> None:
    first, second, third = _packets(1, 2, 3)
    with QuorumProxy() as proxy:
        port = proxy.add_link(LINK, ("127.0.0.1", leader.port))
        with pytest.raises(ValueError, match="positive delay_s"):
            proxy.add_rule(QuorumMatch(), Action.DELAY)
        proxy.add_rule(QuorumMatch(), Action.DELAY, count=1, delay_s=0.3)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as learner:
            started = time.monotonic()
            learner.sendall(first.encode() + second.encode())
            both = first.encode() + second.encode()
            assert leader.wait_for(len(both)) == both
            assert time.monotonic() - started >= 0.3  # delayed, then in order
            crash_at = QuorumMatch(frozenset({PacketType.ACK}))
            proxy.add_rule(crash_at, Action.HOLD, count=1)
            mark = proxy.mark()
            learner.sendall(third.encode() + first.encode())
            held = proxy.wait_for(crash_at, timeout=5, since=mark)
            proxy.discard(held.record_id)  # the receiver crashed at it: it never arrives
            assert leader.wait_for(len(both) + len(first.encode())) == both + first.encode()
            assert [r.state for r in proxy.records()] == [
                "released",
                "forwarded",
                "discarded",
                "forwarded",
            ]


def test_a_function_at_a_packet_runs_as_it_matches_and_what_it_raises_is_kept(
    leader: _Leader,
) -> None:
    first, second, third = _packets(1, 2, 3)
    seen: list[tuple[int, str]] = []

    def crash(record: object) -> None:
        assert isinstance(record, QuorumRecord)
        # It runs before the packet goes anywhere: the hold has not taken it yet.
        seen.append((record.frame.zxid, record.state))  # type: ignore[union-attr]
        if record.frame.zxid == 2:  # type: ignore[union-attr]
            raise RuntimeError("no such process")

    with QuorumProxy() as proxy:
        port = proxy.add_link(LINK, ("127.0.0.1", leader.port))
        at = QuorumMatch(frozenset({PacketType.ACK}))
        proxy.add_rule(at, Action.HOLD, count=2, at_match=crash)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as learner:
            learner.sendall(first.encode() + second.encode() + third.encode())
            held = proxy.wait_for(QuorumMatch(frozenset({PacketType.ACK})), timeout=5)
            proxy.wait_for(at, timeout=5, since=held.record_id)
            assert seen == [(1, "forwarded"), (2, "forwarded")]  # the third matched no rule
            assert [r.state for r in proxy.records()] == ["held", "held", "queued"]
            assert proxy.errors() == [(2, "RuntimeError: no such process")]


def test_a_match_by_learner_takes_its_links_to_any_leader() -> None:
    ack = QuorumPacket(PacketType.ACK, 1)
    mine = QuorumMatch(frozenset({PacketType.ACK}), Direction.TO_LEADER, learner=2)
    assert mine.matches(QuorumLink(2, 1), Direction.TO_LEADER, ack)
    assert mine.matches(QuorumLink(2, 3), Direction.TO_LEADER, ack)
    assert not mine.matches(QuorumLink(3, 2), Direction.TO_LEADER, ack)
    assert not mine.matches(QuorumLink(2, 1), Direction.TO_LEARNER, ack)


def test_a_match_by_zxid_counter_tells_the_ack_of_newleader_from_a_proposal_s() -> None:
    newleader_ack = QuorumMatch(frozenset({PacketType.ACK}), zxid_counter=0)
    assert newleader_ack.matches(LINK, Direction.TO_LEADER, QuorumPacket(PacketType.ACK, 2 << 32))
    assert not newleader_ack.matches(
        LINK, Direction.TO_LEADER, QuorumPacket(PacketType.ACK, (1 << 32) + 6)
    )


def test_a_cut_packet_and_everything_after_it_never_arrive_and_the_connection_closes(
    leader: _Leader,
) -> None:
    first, second, third = _packets(1, 2, 3)
    with QuorumProxy() as proxy:
        port = proxy.add_link(LINK, ("127.0.0.1", leader.port))
        at = QuorumMatch(frozenset({PacketType.ACK}), zxid_counter=2)
        proxy.add_rule(at, Action.CUT)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as learner:
            learner.sendall(first.encode() + second.encode() + third.encode())
            proxy.wait_for(at, timeout=5)
            learner.settimeout(5)
            assert learner.recv(1) == b""  # closed towards the learner too
        assert leader.wait_for(len(first.encode()) + 1, timeout=1.0) == first.encode()
        states = [r.state for r in proxy.records()]
        # The third is logged as cut when it came in the same read as the second (usually).
        assert states[:2] == ["forwarded", "cut"] and set(states[2:]) <= {"cut"}
