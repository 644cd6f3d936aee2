"""The committed protobuf modules are exactly what grpcio-tools generates from the .proto."""

from __future__ import annotations

from pathlib import Path

from adapters.zookeeper.proto import bookkeeper_data_formats_pb2 as pb
from adapters.zookeeper.proto import regenerate


def test_committed_generated_code_is_current(tmp_path: Path) -> None:
    generated = regenerate.generate(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(regenerate.GENERATED_FILES)
    for path in generated:
        committed = regenerate.PROTO_DIR / path.name
        assert committed.read_bytes() == path.read_bytes(), (
            f"{committed} is stale: run `python -m adapters.zookeeper.proto.regenerate`"
        )


def _fields(message: type) -> dict[str, tuple[int, int, int]]:
    descriptor = message.DESCRIPTOR  # type: ignore[attr-defined]
    return {f.name: (f.number, _label(f), f.type) for f in descriptor.fields}


def _label(field: object) -> int:
    # protobuf 7 dropped FieldDescriptor.label in favour of these predicates.
    if getattr(field, "is_required", False):
        return 2
    return 3 if getattr(field, "is_repeated", False) else 1


def test_field_numbers_match_the_reference() -> None:
    required, optional, repeated = 2, 1, 3
    int32, int64, string, bytes_, enum, message = 5, 3, 9, 12, 14, 11
    assert _fields(pb.LedgerMetadataFormat) == {
        "quorumSize": (1, required, int32),
        "ensembleSize": (2, required, int32),
        "length": (3, required, int64),
        "lastEntryId": (4, optional, int64),
        "state": (5, required, enum),
        "segment": (6, repeated, message),
        "digestType": (7, optional, enum),
        "password": (8, optional, bytes_),
        "ackQuorumSize": (9, optional, int32),
        "ctime": (10, optional, int64),
        "customMetadata": (11, repeated, message),
        "cToken": (12, optional, int64),
    }
    assert _fields(pb.LedgerMetadataFormat.Segment) == {
        "ensembleMember": (1, repeated, string),
        "firstEntryId": (2, required, int64),
    }
    assert _fields(pb.LedgerMetadataFormat.cMetadataMapEntry) == {
        "key": (1, optional, string),
        "value": (2, optional, bytes_),
    }
    states = pb.LedgerMetadataFormat.State.DESCRIPTOR.values
    assert {v.name: v.number for v in states} == {"OPEN": 1, "IN_RECOVERY": 2, "CLOSED": 3}
    digests = pb.LedgerMetadataFormat.DigestType.DESCRIPTOR.values
    assert {v.name: v.number for v in digests} == {"CRC32": 1, "HMAC": 2, "CRC32C": 3, "DUMMY": 4}
    assert [f.number for f in pb.CookieFormat.DESCRIPTOR.fields] == [1, 2, 3, 4, 5]
    assert _fields(pb.BookieServiceInfoFormat.Endpoint) == {
        "id": (1, required, string),
        "port": (2, required, int32),
        "host": (3, required, string),
        "protocol": (4, required, string),
        "auth": (5, repeated, string),
        "extensions": (6, repeated, string),
    }
    assert {f.name: f.number for f in pb.BookieServiceInfoFormat.DESCRIPTOR.fields} == {
        "endpoints": 6,
        "properties": 7,
    }
