"""Quorum packets: the jute record both ways, each type's name, the transaction a PROPOSAL
carries, and one direction's stream fed in arbitrary pieces (a SNAP's raw snapshot included)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.zkproxy.errors import MalformedPacket
from adapters.zkquorum.packets import (
    SNAPSHOT_SIGNATURE,
    PacketType,
    QuorumPacket,
    QuorumStream,
    SnapshotChunk,
    counter_of,
    epoch_of,
    zxid_text,
)

ids = st.one_of(st.none(), st.text(max_size=8))
packets = st.builds(
    QuorumPacket,
    st.sampled_from(list(PacketType)).map(int),
    st.integers(-(2**63), 2**63 - 1),
    st.one_of(st.none(), st.binary(max_size=64)),
    st.one_of(st.none(), st.lists(st.tuples(ids, ids), max_size=2).map(tuple)),
)


def _txn(zxid: int, op: int) -> bytes:
    # TxnHeader: long clientId, int cxid, long zxid, long time, int type; then the txn record.
    return struct.pack(">qiqqi", 0x1234, 7, zxid, 1_700_000_000_000, op) + b"\x00\x00\x00\x02/a"


def test_a_packet_is_its_fields_back_to_back() -> None:
    ack = QuorumPacket(PacketType.ACK, 0x100000003)
    assert ack.encode() == struct.pack(">iqii", 3, 0x100000003, -1, -1)
    assert ack.describe() == "ACK 0x100000003"
    assert zxid_text(0x100000003) == "0x100000003"
    assert (epoch_of(0x200000005), counter_of(0x200000005)) == (2, 5)


def test_a_proposal_says_which_transaction_it_carries() -> None:
    proposal = QuorumPacket(PacketType.PROPOSAL, 0x100000004, _txn(0x100000004, 1))
    header = proposal.txn_header()
    assert header is not None and (header.cxid, header.zxid, header.op) == (
        7,
        0x100000004,
        "create",
    )
    assert proposal.describe() == "PROPOSAL 0x100000004 create"
    failed = QuorumPacket(PacketType.PROPOSAL, 0x100000005, _txn(0x100000005, -1))
    assert failed.describe() == "PROPOSAL 0x100000005 error"
    assert QuorumPacket(PacketType.COMMIT, 1, _txn(1, 1)).txn_header() is None
    assert QuorumPacket(PacketType.PROPOSAL, 1, b"\x00").txn_header() is None
    info = QuorumPacket(PacketType.FOLLOWERINFO, 0, struct.pack(">qiq", 2, 0x10000, 0))
    assert info.describe() == "FOLLOWERINFO 0x0 sid=2"
    assert QuorumPacket(42, 0).describe() == "type-42 0x0"


@given(st.lists(packets, max_size=5), st.data())
def test_a_stream_fed_in_any_pieces_gives_back_the_packets_and_their_bytes(
    sent: list[QuorumPacket], data: st.DataObject
) -> None:
    sent = [p for p in sent if p.type != PacketType.SNAP]  # a SNAP is followed by a snapshot
    wire = b"".join(p.encode() for p in sent)
    stream, got = QuorumStream(), []
    position = 0
    while position < len(wire):
        size = data.draw(st.integers(1, len(wire) - position))
        got += stream.feed(wire[position : position + size])
        position += size
    assert [frame for frame, _raw in got] == sent
    assert b"".join(raw for _frame, raw in got) == wire and stream.pending == 0


def test_the_snapshot_after_a_snap_is_passed_on_to_its_signature() -> None:
    snapshot = b"\x00" * 5000 + b"sessions and the tree" + SNAPSHOT_SIGNATURE
    after = QuorumPacket(PacketType.NEWLEADER, 0x200000000, b"server.1=...")
    wire = QuorumPacket(PacketType.SNAP, 0x100000009).encode() + snapshot + after.encode()
    stream, got = QuorumStream(), []
    for start in range(0, len(wire), 700):  # the signature split across two pieces
        got += stream.feed(wire[start : start + 700])
    frames = [frame for frame, _raw in got]
    assert frames[0] == QuorumPacket(PacketType.SNAP, 0x100000009)
    chunks = [f for f in frames if isinstance(f, SnapshotChunk)]
    assert chunks[-1].last and chunks[-1].total == len(snapshot)
    assert sum(c.size for c in chunks) == len(snapshot) and not any(c.last for c in chunks[:-1])
    assert frames[-1] == after
    assert b"".join(raw for _frame, raw in got) == wire


def test_bytes_that_cannot_be_a_packet_are_refused() -> None:
    with pytest.raises(MalformedPacket, match="data length of -7"):
        QuorumStream().feed(struct.pack(">iqi", 2, 1, -7))
    with pytest.raises(MalformedPacket, match="data length of 100"):
        QuorumStream(max_packet_size=99).feed(struct.pack(">iqi", 2, 1, 100))
    with pytest.raises(MalformedPacket, match="-5 auth ids"):
        QuorumStream().feed(struct.pack(">iqii", 3, 1, -1, -5))
    half = QuorumStream()
    assert half.feed(QuorumPacket(PacketType.PING, 1, b"abc").encode()[:-2]) == []
    assert half.pending == 21  # 16 + 3 + 4 bytes, two short


@pytest.mark.parametrize("version", ["3.8.4", "3.9.3"])
def test_golden_packets_from_real_servers_decode_and_encode_to_their_bytes(version: str) -> None:
    """Captured by the quorum proxy between real servers (a 3-server ensemble, one client:
    create, setData, delete, a create that fails, close): each decodes to what was seen, and
    encodes back to the bytes on the wire."""
    path = Path(__file__).parent / "golden" / f"quorum_{version}.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert {row["version"] for row in rows} == {version}
    seen = set()
    for row in rows:
        raw = bytes.fromhex(row["hex"])
        ((packet, exact),) = QuorumStream().feed(raw)
        assert isinstance(packet, QuorumPacket) and exact == raw
        assert packet.describe() == row["packet"] and packet.encode() == raw
        seen.add(packet.describe().split()[0])
    # The whole sync and the broadcast, as Leader names them.
    assert {"FOLLOWERINFO", "LEADERINFO", "ACKEPOCH", "DIFF", "NEWLEADER", "UPTODATE"} <= seen
    assert {"PROPOSAL", "ACK", "COMMIT", "PING"} <= seen
