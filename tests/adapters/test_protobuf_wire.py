"""Protobuf messages read field by field in wire order (adapters/protobuf_wire.py)."""

from __future__ import annotations

import pytest

from adapters import protobuf_wire
from adapters.bookkeeper import v3
from adapters.bookkeeper.proto import BookkeeperProtocol_pb2 as pb
from tests.adapters.bookkeeper.golden import all_frames

KEY = bytes(range(20))


def test_every_golden_v3_frame_reads_and_writes_back_its_bytes() -> None:
    checked = 0
    for frame in all_frames():
        if not frame.summary.startswith("v3") or "UNKNOWN" in frame.summary:
            continue
        descriptor = pb.Request.DESCRIPTOR if frame.is_request else pb.Response.DESCRIPTOR
        fields = protobuf_wire.parse(frame.frame[4:], descriptor)
        assert protobuf_wire.emit(fields) == frame.frame[4:], frame.label
        checked += 1
    assert checked > 150


def test_the_wire_order_is_kept_and_fields_are_named() -> None:
    payload = v3.encode_message(v3.read_request(7, 150, -1, fence=True, master_key=KEY))
    fields = protobuf_wire.parse(payload, pb.Request.DESCRIPTOR)
    assert protobuf_wire.order(fields) == ["header", "readRequest"]
    read = fields[1]
    # protobuf (Python, like Java) writes in field-number order: flag (100) last.
    assert protobuf_wire.order(read.fields) == ["ledgerId", "entryId", "masterKey", "flag"]
    assert read.fields[1].signed() == -1 and read.fields[1].value == 2**64 - 1
    assert "flag=FENCE_LEDGER(1)" in read.describe()
    assert "entryId=-1" in read.describe()
    flag_first = (read.fields[3], *read.fields[:3])
    moved = protobuf_wire.emit((fields[0], protobuf_wire.WireField(
        read.number, read.wire_type, flag_first, read.name, read.descriptor
    )))  # fmt: skip
    assert moved != payload and len(moved) == len(payload)
    again = protobuf_wire.parse(moved, pb.Request.DESCRIPTOR)
    assert protobuf_wire.order(again[1].fields) == ["flag", "ledgerId", "entryId", "masterKey"]
    # Any order parses to the same message.
    assert v3.decode_request(moved) == v3.decode_request(payload)


def test_values_are_replaced_at_any_depth_in_place() -> None:
    payload = v3.encode_message(v3.read_request(1234, 150, 3))
    fields = protobuf_wire.parse(payload, pb.Request.DESCRIPTOR)
    changed = protobuf_wire.replace_values(fields, {"txnId": 0, "ledgerId": 9})
    request = v3.decode_request(protobuf_wire.emit(changed))
    assert (request.header.txnId, request.readRequest.ledgerId) == (0, 9)
    assert protobuf_wire.find(changed, "entryId") is not None
    assert protobuf_wire.find(changed, "masterKey") is None


def test_unknown_fields_keep_their_number_and_bytes() -> None:
    fields = protobuf_wire.parse(bytes.fromhex("f80601"), pb.Request.DESCRIPTOR)  # field 111
    assert [(f.name, f.value) for f in fields] == [("#111", 1)]
    assert protobuf_wire.emit(fields) == bytes.fromhex("f80601")


@pytest.mark.parametrize(
    "broken", ["0a", "0a05080310", "08", "0b", "00", "08ffffffffffffffffffff01"]
)
def test_what_is_not_a_message_is_refused(broken: str) -> None:
    with pytest.raises(protobuf_wire.WireFormatError):
        protobuf_wire.parse(bytes.fromhex(broken), pb.Request.DESCRIPTOR)


def test_non_minimal_varints_do_not_round_trip() -> None:
    minimal = bytes.fromhex("0801")
    padded = bytes.fromhex("088100")  # 1, written in two bytes
    assert protobuf_wire.round_trips(minimal, pb.BKPacketHeader.DESCRIPTOR)
    assert not protobuf_wire.round_trips(padded, pb.BKPacketHeader.DESCRIPTOR)
    assert protobuf_wire.encode_varint(-1) == b"\xff" * 9 + b"\x01"
