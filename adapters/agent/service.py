"""The gRPC servicer: authentication, the fault gate, the audit log, then the action.

Every call, allowed or not, produces one audit line: the caller (peer address and, with
mutual TLS, its certificate's common name), the method, a summary of the request, and the
outcome with its reason. Checks run in this order, each failure ending the call:

1. token (``authorization: Bearer <token>``, compared in constant time) -> UNAUTHENTICATED;
2. for fault calls: ``--allow-destructive`` -> PERMISSION_DENIED;
3. for fault calls: ``instance_id`` == the cluster's INSTANCEID -> PERMISSION_DENIED.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from adapters.agent.config import AgentConfig
from adapters.agent.errors import AgentError, AgentRefused, AgentUnauthenticated
from adapters.agent.firewall import Partitioner
from adapters.agent.identity import ClusterIdentity
from adapters.agent.proto import agent_pb2 as pb
from adapters.agent.proto import agent_pb2_grpc as pb_grpc
from adapters.agent.supervisor import ProcessSnapshot, ProcessState, Supervisor

AUDIT_LOGGER = "bkconform.agent.audit"
MAX_LOG_LINES = 10_000
DEFAULT_LOG_LINES = 100

FAULT_METHODS = frozenset(
    {"Kill", "Pause", "Restart", "RestartWithJournalOff", "Wipe", "Partition"}
)

_STATES = {
    ProcessState.NEVER_STARTED: pb.NEVER_STARTED,
    ProcessState.RUNNING: pb.RUNNING,
    ProcessState.PAUSED: pb.PAUSED,
    ProcessState.STOPPED: pb.STOPPED,
}

_Reply = TypeVar("_Reply")

audit = logging.getLogger(AUDIT_LOGGER)


def bearer_token_matches(metadata: Any, token: str) -> bool:
    """True when the call's metadata holds ``authorization: Bearer <token>``."""
    expected = f"Bearer {token}".encode()
    for key, value in metadata or ():
        if key == "authorization":
            presented = value.encode() if isinstance(value, str) else bytes(value)
            return hmac.compare_digest(presented, expected)
    return False


def _caller(context: Any) -> str:
    peer = str(context.peer())
    # Without TLS the auth context holds no certificate names.
    names = context.auth_context().get("x509_common_name") or []
    if names:
        return f"{peer} cn={b','.join(names).decode(errors='replace')}"
    return peer


class AgentService(pb_grpc.AgentServicer):
    """Implements every RPC of ``agent.proto`` over a :class:`Supervisor` and a
    :class:`Partitioner`."""

    def __init__(
        self,
        config: AgentConfig,
        supervisor: Supervisor,
        partitioner: Partitioner,
        identity: ClusterIdentity,
    ) -> None:
        self._config = config
        self._supervisor = supervisor
        self._partitioner = partitioner
        self._identity = identity

    # The gate -----------------------------------------------------------------------------

    def _serve(
        self,
        method: str,
        context: Any,
        action: Callable[[], _Reply],
        *,
        instance_id: str = "",
        summary: str = "",
    ) -> _Reply:
        caller = _caller(context)
        described = f"{method}({summary})"
        try:
            if not bearer_token_matches(context.invocation_metadata(), self._config.token):
                raise AgentUnauthenticated(
                    "missing or wrong token: send metadata 'authorization: Bearer <token>' "
                    "with the agent's shared secret"
                )
            if method in FAULT_METHODS:
                if not self._config.allow_destructive:
                    raise AgentRefused(
                        f"{method} is a fault call and this agent was started without "
                        "--allow-destructive; it only answers Status, LogTail, Start, Resume "
                        "and Heal"
                    )
                self._identity.check(instance_id)
            reply = action()
        except AgentError as exc:
            outcome = "refused" if isinstance(exc, AgentRefused) else "failed"
            audit.warning(
                "%s %s by %s: %s (%s)", outcome, described, caller, exc.grpc_code_name, exc
            )
            context.abort(getattr(grpc.StatusCode, exc.grpc_code_name), str(exc))
            raise AssertionError("context.abort returned") from exc
        except Exception as exc:
            audit.exception("failed %s by %s: unexpected error", described, caller)
            context.abort(grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}")
            raise AssertionError("context.abort returned") from exc
        audit.info("allowed %s by %s", described, caller)
        return reply

    # Conversions --------------------------------------------------------------------------

    def _status(self, snapshot: ProcessSnapshot | None = None) -> pb.ProcessStatus:
        snapshot = snapshot or self._supervisor.snapshot()
        status = pb.ProcessStatus(
            state=_STATES[snapshot.state],
            pid=snapshot.pid or 0,
            uptime_seconds=snapshot.uptime_seconds,
            journal_off=snapshot.journal_off,
            starts=snapshot.starts,
            command=list(snapshot.command),
            partitioned_peers=self._partitioner.peers,
        )
        if snapshot.exit_code is not None:
            status.exit_code = snapshot.exit_code
        return status

    def _partition_status(self) -> pb.PartitionStatus:
        return pb.PartitionStatus(
            peers=self._partitioner.peers, backend=self._partitioner.backend_name
        )

    # Read-only ----------------------------------------------------------------------------

    def Status(self, request: pb.StatusRequest, context: Any) -> pb.ProcessStatus:
        return self._serve("Status", context, self._status)

    def LogTail(self, request: pb.LogTailRequest, context: Any) -> pb.LogTailReply:
        lines = min(request.lines or DEFAULT_LOG_LINES, MAX_LOG_LINES)

        def tail() -> pb.LogTailReply:
            return pb.LogTailReply(
                path=str(self._config.log_file), lines=self._supervisor.log_tail(lines)
            )

        return self._serve("LogTail", context, tail, summary=f"lines={lines}")

    # Recovery -----------------------------------------------------------------------------

    def Start(self, request: pb.StartRequest, context: Any) -> pb.ProcessStatus:
        return self._serve("Start", context, lambda: self._status(self._supervisor.start()))

    def Resume(self, request: pb.ResumeRequest, context: Any) -> pb.ProcessStatus:
        return self._serve("Resume", context, lambda: self._status(self._supervisor.resume()))

    def Heal(self, request: pb.HealRequest, context: Any) -> pb.PartitionStatus:
        def heal() -> pb.PartitionStatus:
            self._partitioner.heal()
            return self._partition_status()

        return self._serve("Heal", context, heal)

    # Faults -------------------------------------------------------------------------------

    def Kill(self, request: pb.FaultRequest, context: Any) -> pb.ProcessStatus:
        return self._serve(
            "Kill",
            context,
            lambda: self._status(self._supervisor.kill()),
            instance_id=request.instance_id,
        )

    def Pause(self, request: pb.FaultRequest, context: Any) -> pb.ProcessStatus:
        return self._serve(
            "Pause",
            context,
            lambda: self._status(self._supervisor.pause()),
            instance_id=request.instance_id,
        )

    def Restart(self, request: pb.FaultRequest, context: Any) -> pb.ProcessStatus:
        return self._serve(
            "Restart",
            context,
            lambda: self._status(self._supervisor.restart()),
            instance_id=request.instance_id,
        )

    def RestartWithJournalOff(self, request: pb.FaultRequest, context: Any) -> pb.ProcessStatus:
        return self._serve(
            "RestartWithJournalOff",
            context,
            lambda: self._status(self._supervisor.restart(journal_off=True)),
            instance_id=request.instance_id,
        )

    def Wipe(self, request: pb.WipeRequest, context: Any) -> pb.WipeReply:
        def wipe() -> pb.WipeReply:
            result = self._supervisor.wipe(kill_first=request.kill_first)
            return pb.WipeReply(
                status=self._status(),
                wiped_dirs=[str(d) for d in result.wiped_dirs],
                removed_entries=result.removed_entries,
            )

        return self._serve(
            "Wipe",
            context,
            wipe,
            instance_id=request.instance_id,
            summary=f"kill_first={request.kill_first}",
        )

    def Partition(self, request: pb.PartitionRequest, context: Any) -> pb.PartitionStatus:
        def partition() -> pb.PartitionStatus:
            self._partitioner.partition(list(request.peers))
            return self._partition_status()

        return self._serve(
            "Partition",
            context,
            partition,
            instance_id=request.instance_id,
            summary=f"peers={','.join(request.peers)}",
        )
