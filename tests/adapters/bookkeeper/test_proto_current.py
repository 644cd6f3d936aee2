"""The committed protobuf modules are exactly what grpcio-tools generates from the .proto."""

from __future__ import annotations

from pathlib import Path

from adapters.bookkeeper.proto import generate


def test_committed_generated_code_is_current(tmp_path: Path) -> None:
    generate.generate(tmp_path)
    generated = sorted(p.name for p in tmp_path.iterdir())
    assert generated == ["BookkeeperProtocol_pb2.py", "BookkeeperProtocol_pb2.pyi"]
    for name in generated:
        committed = generate.PROTO_DIR / name
        assert committed.read_bytes() == (tmp_path / name).read_bytes(), (
            f"{committed} is stale: run `python -m adapters.bookkeeper.proto.generate`"
        )


def test_enum_values_match_the_reference() -> None:
    from adapters.bookkeeper.proto import BookkeeperProtocol_pb2 as pb
    from adapters.bookkeeper.status import StatusCode

    assert {v.name: v.number for v in pb.StatusCode.DESCRIPTOR.values} == {
        s.name: int(s) for s in StatusCode
    }
    assert pb.BATCH_READ_ENTRY == 12 and pb.GET_LIST_OF_ENTRIES_OF_LEDGER == 11
    assert pb.Request.DESCRIPTOR.fields_by_name["requestContext"].number == 200
    assert pb.ReadRequest.DESCRIPTOR.fields_by_name["flag"].number == 100
