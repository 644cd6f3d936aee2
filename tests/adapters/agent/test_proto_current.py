"""The committed gRPC modules are exactly what grpcio-tools generates from agent.proto."""

from __future__ import annotations

from pathlib import Path

from adapters.agent.proto import generate


def test_committed_generated_code_is_current(tmp_path: Path) -> None:
    written = generate.generate(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(generate.GENERATED_FILES)
    for path in written:
        committed = generate.PROTO_DIR / path.name
        assert committed.read_bytes() == path.read_bytes(), (
            f"{committed} is stale: run `python -m adapters.agent.proto.generate`"
        )


def test_the_service_has_every_call_of_the_design() -> None:
    from adapters.agent.proto import agent_pb2 as pb
    from adapters.agent.service import FAULT_METHODS

    methods = set(pb.DESCRIPTOR.services_by_name["Agent"].methods_by_name)
    assert methods == {"Status", "LogTail", "Start", "Resume", "Heal"} | FAULT_METHODS
    assert sorted(FAULT_METHODS) == [
        "Kill", "Partition", "Pause", "Restart", "RestartWithJournalOff", "Wipe",
    ]  # fmt: skip
    # Every fault request carries the INSTANCEID the agent checks.
    service = pb.DESCRIPTOR.services_by_name["Agent"]
    for name in FAULT_METHODS:
        assert "instance_id" in service.methods_by_name[name].input_type.fields_by_name
