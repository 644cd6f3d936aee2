"""The guided search's judge of window coverage on recorded packets (fast)."""

from __future__ import annotations

from adapters.zkquorum.packets import PacketType, QuorumPacket
from adapters.zkquorum.proxy import Direction, QuorumLink, QuorumRecord
from conformance.zab.guided import window_shapes

LINK = QuorumLink(1, 3)


def _to_learner(connection: int, *kinds: PacketType) -> list[QuorumRecord]:
    return [
        QuorumRecord(i, LINK, connection, Direction.TO_LEARNER, QuorumPacket(kind, i), 16, 0.0)
        for i, kind in enumerate(kinds)
    ]


def test_window_shapes_name_the_sync_what_came_inside_and_how_it_ended() -> None:
    records = [
        *_to_learner(1, PacketType.DIFF, PacketType.NEWLEADER, PacketType.UPTODATE),
        *_to_learner(
            2,
            PacketType.DIFF,
            PacketType.PROPOSAL,
            PacketType.NEWLEADER,
            PacketType.PROPOSAL,
            PacketType.PROPOSAL,
            PacketType.PING,
            PacketType.COMMIT,
            PacketType.UPTODATE,
        ),
        *_to_learner(3, PacketType.SNAP, PacketType.NEWLEADER, PacketType.COMMIT),
        *_to_learner(4, PacketType.LEADERINFO),  # no NEWLEADER: no window
    ]
    assert window_shapes(records) == {
        "DIFF:empty:uptodate",
        "DIFF:PROPOSAL+COMMIT:uptodate",
        "SNAP:COMMIT:cut",
    }


def test_packets_to_the_leader_shape_nothing() -> None:
    ack = QuorumRecord(1, LINK, 1, Direction.TO_LEADER, QuorumPacket(PacketType.ACK, 1), 16, 0.0)
    assert window_shapes([ack]) == set()
