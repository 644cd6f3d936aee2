"""A typed client for the fault agent: ``AgentClient(host, port, token).kill(instance_id)``.

Every call has a deadline (``timeout`` seconds, per call); gRPC failures come back as the
:mod:`adapters.agent.errors` classes (refusals as :class:`AgentRefused`, an agent that does not
answer as :class:`AgentUnreachable`), never as raw ``grpc.RpcError``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import grpc

from adapters.agent.errors import (
    AgentCallFailed,
    AgentError,
    AgentPreconditionFailed,
    AgentRefused,
    AgentUnauthenticated,
    AgentUnreachable,
    InvalidAgentRequest,
)
from adapters.agent.proto import agent_pb2 as pb
from adapters.agent.proto import agent_pb2_grpc as pb_grpc

DEFAULT_TIMEOUT = 10.0


class ProcessState(enum.Enum):
    NEVER_STARTED = "never-started"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"


_STATES = {
    pb.NEVER_STARTED: ProcessState.NEVER_STARTED,
    pb.RUNNING: ProcessState.RUNNING,
    pb.PAUSED: ProcessState.PAUSED,
    pb.STOPPED: ProcessState.STOPPED,
}


@dataclass(frozen=True)
class ProcessStatus:
    state: ProcessState
    pid: int | None
    exit_code: int | None
    uptime_seconds: float
    journal_off: bool
    starts: int
    command: tuple[str, ...]
    partitioned_peers: tuple[str, ...]

    @classmethod
    def from_proto(cls, message: pb.ProcessStatus) -> ProcessStatus:
        if message.state not in _STATES:
            raise AgentCallFailed(f"the agent reported an unknown process state {message.state}")
        return cls(
            state=_STATES[message.state],
            pid=message.pid or None,
            exit_code=message.exit_code if message.HasField("exit_code") else None,
            uptime_seconds=message.uptime_seconds,
            journal_off=message.journal_off,
            starts=message.starts,
            command=tuple(message.command),
            partitioned_peers=tuple(message.partitioned_peers),
        )


@dataclass(frozen=True)
class WipeResult:
    status: ProcessStatus
    wiped_dirs: tuple[str, ...]
    removed_entries: int


@dataclass(frozen=True)
class PartitionStatus:
    peers: tuple[str, ...]
    backend: str


@dataclass(frozen=True)
class LogTail:
    path: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class ClientTls:
    """PEM files for a TLS channel: the CA that signed the agent's certificate, and the
    client's own certificate and key when the agent requires client certificates."""

    ca: Path
    cert: Path | None = None
    key: Path | None = None
    server_name: str | None = None
    """The name to check the agent's certificate against, when not the host dialled."""


_ERRORS: dict[str, type[AgentError]] = {
    "UNAUTHENTICATED": AgentUnauthenticated,
    "PERMISSION_DENIED": AgentRefused,
    "FAILED_PRECONDITION": AgentPreconditionFailed,
    "INVALID_ARGUMENT": InvalidAgentRequest,
    "UNAVAILABLE": AgentUnreachable,
    "DEADLINE_EXCEEDED": AgentUnreachable,
}


def _translate(exc: grpc.RpcError, method: str, target: str) -> AgentError:
    code = exc.code()
    name = code.name if code is not None else "UNKNOWN"
    details = exc.details() or name
    error = _ERRORS.get(name, AgentCallFailed)
    if error is AgentUnreachable:
        return AgentUnreachable(f"{method} on agent {target}: {name}: {details}")
    return error(f"{method} refused or failed by agent {target}: {details}")


class AgentClient:
    """One channel to one agent. Use as a context manager, or call :meth:`close`."""

    def __init__(
        self,
        host: str,
        port: int,
        token: str,
        *,
        tls: ClientTls | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        instance_id: str = "",
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.timeout = timeout
        self.instance_id = instance_id
        self._metadata = (("authorization", f"Bearer {token}"),)
        if tls is None:
            self._channel = grpc.insecure_channel(self.target)
        else:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=tls.ca.read_bytes(),
                private_key=tls.key.read_bytes() if tls.key else None,
                certificate_chain=tls.cert.read_bytes() if tls.cert else None,
            )
            options = []
            if tls.server_name:
                options.append(("grpc.ssl_target_name_override", tls.server_name))
            self._channel = grpc.secure_channel(self.target, credentials, options=options)
        # grpcio-tools writes no annotations: the generated stub class is untyped.
        self._stub = pb_grpc.AgentStub(self._channel)  # type: ignore[no-untyped-call]

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, method: str, request: Any) -> Any:
        rpc: Callable[..., Any] = getattr(self._stub, method)
        try:
            return rpc(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as exc:
            raise _translate(exc, method, self.target) from None

    def _fault(self, instance_id: str | None) -> pb.FaultRequest:
        return pb.FaultRequest(instance_id=self.instance_id if instance_id is None else instance_id)

    # Read-only ----------------------------------------------------------------------------

    def status(self) -> ProcessStatus:
        return ProcessStatus.from_proto(self._call("Status", pb.StatusRequest()))

    def log_tail(self, lines: int = 100) -> LogTail:
        if not 0 < lines <= 10_000:
            raise ValueError(f"lines must be in 1..10000, got {lines}")
        reply = self._call("LogTail", pb.LogTailRequest(lines=lines))
        return LogTail(path=reply.path, lines=tuple(reply.lines))

    # Recovery -----------------------------------------------------------------------------

    def start(self) -> ProcessStatus:
        return ProcessStatus.from_proto(self._call("Start", pb.StartRequest()))

    def resume(self) -> ProcessStatus:
        return ProcessStatus.from_proto(self._call("Resume", pb.ResumeRequest()))

    def heal(self) -> PartitionStatus:
        reply = self._call("Heal", pb.HealRequest())
        return PartitionStatus(peers=tuple(reply.peers), backend=reply.backend)

    # Faults (``instance_id`` defaults to the one given to the constructor) -----------------

    def kill(self, instance_id: str | None = None) -> ProcessStatus:
        return ProcessStatus.from_proto(self._call("Kill", self._fault(instance_id)))

    def pause(self, instance_id: str | None = None) -> ProcessStatus:
        return ProcessStatus.from_proto(self._call("Pause", self._fault(instance_id)))

    def restart(self, instance_id: str | None = None) -> ProcessStatus:
        return ProcessStatus.from_proto(self._call("Restart", self._fault(instance_id)))

    def restart_with_journal_off(self, instance_id: str | None = None) -> ProcessStatus:
        request = self._fault(instance_id)
        return ProcessStatus.from_proto(self._call("RestartWithJournalOff", request))

    def wipe(self, instance_id: str | None = None, *, kill_first: bool = False) -> WipeResult:
        request = pb.WipeRequest(
            instance_id=self.instance_id if instance_id is None else instance_id,
            kill_first=kill_first,
        )
        reply = self._call("Wipe", request)
        return WipeResult(
            status=ProcessStatus.from_proto(reply.status),
            wiped_dirs=tuple(reply.wiped_dirs),
            removed_entries=reply.removed_entries,
        )

    def partition(self, peers: Sequence[str], instance_id: str | None = None) -> PartitionStatus:
        if isinstance(peers, str):
            raise TypeError("peers is a list of host[:port] strings, not one string")
        request = pb.PartitionRequest(
            instance_id=self.instance_id if instance_id is None else instance_id,
            peers=list(peers),
        )
        reply = self._call("Partition", request)
        return PartitionStatus(peers=tuple(reply.peers), backend=reply.backend)
