"""The agent's gate in process (no gRPC server, no process): a fault call is refused without
``--allow-destructive`` before anything is done, and checked against the cluster's identity
with it. The same gate over gRPC is in ``test_agent_server.py`` (a cluster test)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest

from adapters.agent.config import AgentConfig
from adapters.agent.proto import agent_pb2 as pb
from adapters.agent.service import FAULT_METHODS, AgentService

TOKEN = "a-token-of-the-tests-only"


class Aborted(Exception):
    pass


class Context:
    def __init__(self, token: str = TOKEN) -> None:
        self.metadata = (("authorization", f"Bearer {token}"),)
        self.aborted: tuple[Any, str] | None = None

    def invocation_metadata(self) -> Any:
        return self.metadata

    def peer(self) -> str:
        return "ipv4:127.0.0.1:1"

    def auth_context(self) -> dict[str, list[bytes]]:
        return {}

    def abort(self, code: Any, details: str) -> None:
        self.aborted = (code, details)
        raise Aborted(details)


class Recorder:
    """Supervisor, partitioner and identity at once: records what it was asked to do."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            raise AssertionError(f"{name} must not be reached")

        return call


def service(tmp_path: Path, *, destructive: bool) -> tuple[AgentService, Recorder]:
    config = AgentConfig(
        command=("true",),
        token=TOKEN,
        log_file=tmp_path / "agent.log",
        allow_destructive=destructive,
        instance_id="cluster-1" if destructive else None,
    )
    recorder = Recorder()
    return AgentService(config, recorder, recorder, recorder), recorder  # type: ignore[arg-type]


def test_every_fault_call_is_refused_without_allow_destructive(tmp_path: Path) -> None:
    agent, recorder = service(tmp_path, destructive=False)
    calls = {
        "Kill": lambda c: agent.Kill(pb.FaultRequest(instance_id="cluster-1"), c),
        "Pause": lambda c: agent.Pause(pb.FaultRequest(instance_id="cluster-1"), c),
        "Restart": lambda c: agent.Restart(pb.FaultRequest(instance_id="cluster-1"), c),
        "RestartWithJournalOff": lambda c: agent.RestartWithJournalOff(
            pb.FaultRequest(instance_id="cluster-1"), c
        ),
        "Wipe": lambda c: agent.Wipe(pb.WipeRequest(instance_id="cluster-1"), c),
        "Partition": lambda c: agent.Partition(pb.PartitionRequest(instance_id="cluster-1"), c),
    }
    assert set(calls) == FAULT_METHODS
    for name, call in calls.items():
        context = Context()
        with pytest.raises(Aborted, match="without --allow-destructive"):
            call(context)
        assert (
            context.aborted is not None and context.aborted[0] is grpc.StatusCode.PERMISSION_DENIED
        ), name
    assert recorder.calls == []  # refused before the identity or the process was touched


def test_with_allow_destructive_the_identity_is_checked_first(tmp_path: Path) -> None:
    agent, recorder = service(tmp_path, destructive=True)
    context = Context()
    with pytest.raises(Aborted):
        agent.Kill(pb.FaultRequest(instance_id="cluster-1"), context)
    assert recorder.calls == ["check"]


def test_a_wrong_token_is_refused_before_the_gate(tmp_path: Path) -> None:
    agent, recorder = service(tmp_path, destructive=False)
    context = Context(token="wrong")
    with pytest.raises(Aborted):
        agent.Kill(pb.FaultRequest(instance_id="cluster-1"), context)
    assert context.aborted is not None
    assert context.aborted[0] is grpc.StatusCode.UNAUTHENTICATED
    assert recorder.calls == []
