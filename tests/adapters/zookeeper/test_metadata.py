"""LedgerMetadata: invariants, state changes, and the format-3/format-2 znode encoding."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from google.protobuf import text_format
from hypothesis import example, given
from hypothesis import strategies as st

from adapters.zookeeper.errors import (
    InvalidLedgerMetadata,
    InvalidMetadataTransition,
    MalformedMetadata,
    UnsupportedMetadataFormat,
)
from adapters.zookeeper.metadata import (
    VERSION_HEADER_KEY,
    DigestType,
    LedgerMetadata,
    LedgerState,
    Segment,
    parse_ledger_metadata,
    serialize_ledger_metadata,
)
from adapters.zookeeper.proto.bookkeeper_data_formats_pb2 import LedgerMetadataFormat
from tests.adapters.zookeeper.golden import golden_ledger_znodes
from tests.adapters.zookeeper.strategies import ledger_metadata

ENSEMBLE = ("127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183")
HEADER_V3 = VERSION_HEADER_KEY + b"3\n"
GOLDEN_BYTES = [z.data for z in golden_ledger_znodes("zk_4.17.4.json")]


def make(**changes: Any) -> LedgerMetadata:
    base = LedgerMetadata(
        ensemble_size=3,
        write_quorum_size=3,
        ack_quorum_size=2,
        segments=(Segment(0, ENSEMBLE),),
        digest_type=DigestType.CRC32,
        password=b"pw",
    )
    return replace(base, **changes)


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# --- encoding -----------------------------------------------------------------------------


@given(ledger_metadata())
def test_serialize_then_parse_is_identity(metadata: LedgerMetadata) -> None:
    data = serialize_ledger_metadata(metadata)
    assert data.startswith(HEADER_V3)
    assert parse_ledger_metadata(data) == metadata


@given(ledger_metadata())
def test_encoding_is_the_delimited_protobuf_bookkeeper_writes(metadata: LedgerMetadata) -> None:
    data = serialize_ledger_metadata(metadata)
    message = _delimited_body(data[len(HEADER_V3) :])
    assert data == HEADER_V3 + varint(len(message)) + message
    fmt = LedgerMetadataFormat()
    fmt.ParseFromString(message)
    assert fmt.SerializeToString() == message
    # Fields BookKeeper always writes, whatever the state.
    for name in ("quorumSize", "ensembleSize", "length", "lastEntryId", "state"):
        assert fmt.HasField(name), name
    assert fmt.HasField("ackQuorumSize") and fmt.HasField("cToken")
    assert fmt.HasField("ctime") == (metadata.ctime is not None)
    assert fmt.HasField("password") == fmt.HasField("digestType") == (metadata.password is not None)


@given(ledger_metadata())
def test_format_2_text_parses_to_the_same_value_without_ctoken(metadata: LedgerMetadata) -> None:
    fmt = LedgerMetadataFormat()
    fmt.ParseFromString(_delimited_body(serialize_ledger_metadata(metadata)[len(HEADER_V3) :]))
    fmt.ClearField("cToken")  # format 2 never carries the creation token
    data = VERSION_HEADER_KEY + b"2\n" + text_format.MessageToString(fmt).encode()
    assert parse_ledger_metadata(data) == replace(metadata, ctoken=0)


def _delimited_body(body: bytes) -> bytes:
    for width in range(1, 6):
        if not body[width - 1] & 0x80:
            return body[width:]
    raise AssertionError("no varint")


def test_format_2_as_java_prints_it() -> None:
    text = (
        b"BookieMetadataFormatVersion\t2\n"
        b"quorumSize: 3\nensembleSize: 3\nlength: 35\nlastEntryId: 4\nstate: CLOSED\n"
        b'segment {\n  ensembleMember: "127.0.0.1:3181"\n  ensembleMember: "127.0.0.1:3182"\n'
        b'  ensembleMember: "127.0.0.1:3183"\n  firstEntryId: 0\n}\n'
        b'digestType: HMAC\npassword: "p\\\\w\\001"\nackQuorumSize: 2\nctime: 1700000000000\n'
    )
    assert parse_ledger_metadata(text) == make(
        state=LedgerState.CLOSED,
        last_entry_id=4,
        length=35,
        digest_type=DigestType.HMAC,
        password=b"p\\w\x01",
        ctime=1700000000000,
    )


def test_missing_ack_quorum_means_the_write_quorum() -> None:
    fmt = LedgerMetadataFormat(quorumSize=2, ensembleSize=3, length=0, state="OPEN")
    fmt.segment.add(ensembleMember=ENSEMBLE, firstEntryId=0)
    body = fmt.SerializeToString()
    metadata = parse_ledger_metadata(HEADER_V3 + varint(len(body)) + body)
    assert metadata.ack_quorum_size == metadata.write_quorum_size == 2
    # No password: a pre-4.2 ledger, so neither digest type nor password.
    assert metadata.password is None and metadata.digest_type is None


def test_length_and_last_entry_are_ignored_unless_closed() -> None:
    fmt = LedgerMetadataFormat(
        quorumSize=3, ensembleSize=3, length=99, lastEntryId=7, state="IN_RECOVERY"
    )
    fmt.segment.add(ensembleMember=ENSEMBLE, firstEntryId=0)
    body = fmt.SerializeToString()
    metadata = parse_ledger_metadata(HEADER_V3 + varint(len(body)) + body)
    assert (metadata.last_entry_id, metadata.length) == (-1, 0)


def test_bytes_after_the_delimited_message_are_ignored_like_bookkeeper() -> None:
    assert parse_ledger_metadata(GOLDEN_BYTES[0] + b"trailing") == parse_ledger_metadata(
        GOLDEN_BYTES[0]
    )


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"", MalformedMetadata),
        (b"BookieMetadataFormatVersion", MalformedMetadata),
        (b"BookieMetadataFormatVersion 3\n", MalformedMetadata),
        (b"BookieMetadataFormatVersion\t3", MalformedMetadata),
        (b"BookieMetadataFormatVersion\t12345678901\n", MalformedMetadata),
        (b"BookieMetadataFormatVersion\tx\n", MalformedMetadata),
        (b"BookieMetadataFormatVersion\t1\n3\n3\n0\n0\ta:1\n", UnsupportedMetadataFormat),
        (b"BookieMetadataFormatVersion\t4\n", UnsupportedMetadataFormat),
        (HEADER_V3, MalformedMetadata),
        (HEADER_V3 + b"\x05\x08\x03", MalformedMetadata),
        (HEADER_V3 + b"\xff\xff\xff\xff\xff\x01", MalformedMetadata),
        (HEADER_V3 + b"\x02\x08\x03", MalformedMetadata),
        (VERSION_HEADER_KEY + b"2\nquorumSize: 3\n", MalformedMetadata),
        (VERSION_HEADER_KEY + b"2\nnot text format {", MalformedMetadata),
        (VERSION_HEADER_KEY + b"2\n\xff", MalformedMetadata),
    ],
)
def test_malformed_znodes_raise_typed_errors(data: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        parse_ledger_metadata(data, path="/ledgers/00/0000/L0001")


def test_errors_name_the_znode() -> None:
    with pytest.raises(MalformedMetadata, match="/ledgers/00/0000/L0007"):
        parse_ledger_metadata(b"junk", path="/ledgers/00/0000/L0007")


def test_a_segment_of_the_wrong_size_is_malformed() -> None:
    fmt = LedgerMetadataFormat(quorumSize=3, ensembleSize=3, length=0, state="OPEN")
    fmt.segment.add(ensembleMember=ENSEMBLE[:2], firstEntryId=0)
    body = fmt.SerializeToString()
    with pytest.raises(MalformedMetadata, match="2 bookies"):
        parse_ledger_metadata(HEADER_V3 + varint(len(body)) + body)


def test_invalid_utf8_bookie_id_is_malformed() -> None:
    body = bytes.fromhex("0803 1001 1800 2801 3206 0a02fffe 1000")
    with pytest.raises(MalformedMetadata, match="UTF-8"):
        parse_ledger_metadata(HEADER_V3 + varint(len(body)) + body)


# --- fuzzing the parser ---------------------------------------------------------------------


def _parses_to_valid_or_raises_typed(data: bytes) -> None:
    try:
        metadata = parse_ledger_metadata(data)
    except MalformedMetadata:
        return
    # Whatever parsed is a valid value and survives its own encoding.
    assert parse_ledger_metadata(serialize_ledger_metadata(metadata)) == metadata


@given(st.binary(max_size=200))
def test_arbitrary_bytes_give_a_typed_error_or_a_valid_value(data: bytes) -> None:
    _parses_to_valid_or_raises_typed(data)


@given(st.binary(max_size=200))
@example(b"\x00")
def test_arbitrary_protobuf_after_a_valid_header(body: bytes) -> None:
    _parses_to_valid_or_raises_typed(HEADER_V3 + varint(len(body)) + body)
    _parses_to_valid_or_raises_typed(HEADER_V3 + body)
    _parses_to_valid_or_raises_typed(VERSION_HEADER_KEY + b"2\n" + body)


@given(
    st.sampled_from(GOLDEN_BYTES),
    st.integers(min_value=0, max_value=200),
    st.integers(min_value=0, max_value=255),
)
def test_mutated_golden_znodes(data: bytes, position: int, value: int) -> None:
    position %= len(data)
    _parses_to_valid_or_raises_typed(data[:position])
    _parses_to_valid_or_raises_typed(data[:position] + bytes([value]) + data[position + 1 :])


# --- invariants ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"ensemble_size": 0},
        {"ack_quorum_size": 0},
        {"ack_quorum_size": 4},
        {"write_quorum_size": 4},
        {"ensemble_size": 2**31},
        {"segments": ()},
        {"segments": (Segment(1, ENSEMBLE),)},
        {"segments": (Segment(0, ENSEMBLE), Segment(0, ENSEMBLE))},
        {"segments": (Segment(0, ENSEMBLE), Segment(5, ENSEMBLE), Segment(3, ENSEMBLE))},
        {"segments": (Segment(0, ENSEMBLE[:2]),)},
        {"last_entry_id": 3},
        {"length": 10},
        {"state": LedgerState.CLOSED, "last_entry_id": -2},
        {"state": LedgerState.CLOSED, "length": -1},
        {"state": 7},
        {"digest_type": None},
        {"password": None},
        {"digest_type": 9},
        {"ctoken": 2**63},
        {"ctime": -(2**63) - 1},
        {"custom_metadata": (("k", b"1"), ("k", b"2"))},
        {"custom_metadata": (("k", "not bytes"),)},
        {"ensemble_size": True},
        {"segments": None},
        {"segments": ("not a segment",)},
        {"custom_metadata": 5},
        {"custom_metadata": (("only-a-key",),)},
    ],
    ids=repr,
)
def test_invariant_violations_are_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(InvalidLedgerMetadata):
        make(**changes)


@pytest.mark.parametrize("bookie", ["", "readonly", "host with space:1", "tab\t:1", "a\n"])
def test_segments_refuse_invalid_bookie_ids(bookie: str) -> None:
    with pytest.raises(InvalidLedgerMetadata):
        Segment(0, (bookie,))
    with pytest.raises(InvalidLedgerMetadata):
        Segment(0, "127.0.0.1:3181")  # type: ignore[arg-type]


def test_custom_metadata_accepts_a_mapping_and_keeps_its_order() -> None:
    metadata = make(custom_metadata={"b": b"2", "a": b"1"})
    assert metadata.custom_metadata == (("b", b"2"), ("a", b"1"))
    assert metadata.custom_metadata_dict() == {"a": b"1", "b": b"2"}


# --- state changes ---------------------------------------------------------------------------


def test_open_to_in_recovery_to_closed() -> None:
    opened = make(ctoken=1234)
    recovering = opened.to_in_recovery()
    assert recovering.state is LedgerState.IN_RECOVERY and recovering.ctoken == 0
    closed = recovering.to_closed(last_entry_id=9, length=100)
    assert (closed.state, closed.last_entry_id, closed.length) == (LedgerState.CLOSED, 9, 100)
    assert opened.to_closed(-1, 0).is_closed
    assert recovering.to_in_recovery() == recovering


def test_closed_ledgers_do_not_change() -> None:
    closed = make().to_closed(4, 35)
    for change in (
        closed.to_in_recovery,
        lambda: closed.to_closed(5, 40),
        lambda: closed.with_new_segment(5, ENSEMBLE),
        lambda: closed.with_replaced_segment(0, ENSEMBLE),
    ):
        with pytest.raises(InvalidMetadataTransition):
            change()


def test_ensemble_changes() -> None:
    replacement = ("127.0.0.1:3181", "127.0.0.1:3184", "127.0.0.1:3183")
    changed = make(ctoken=5).with_new_segment(10, replacement)
    assert changed.segments == (Segment(0, ENSEMBLE), Segment(10, replacement))
    assert changed.ctoken == 0
    assert changed.current_ensemble == replacement
    assert changed.ensemble_at(9) == ENSEMBLE and changed.ensemble_at(10) == replacement
    assert changed.with_replaced_segment(10, ENSEMBLE).segments[1] == Segment(10, ENSEMBLE)
    with pytest.raises(InvalidMetadataTransition):
        changed.with_new_segment(10, ENSEMBLE)
    with pytest.raises(InvalidMetadataTransition):
        changed.with_replaced_segment(3, ENSEMBLE)
    with pytest.raises(InvalidLedgerMetadata):
        changed.with_new_segment(20, ENSEMBLE[:2])
