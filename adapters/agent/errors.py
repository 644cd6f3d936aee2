"""Every error the fault agent and its client raise, under one root: :class:`AgentError`.

Server side, each error class carries the gRPC status code the service answers with; client
side, :func:`adapters.agent.client.AgentClient` turns a status code back into the same class,
so ``except AgentRefused`` works the same on both ends.
"""

from __future__ import annotations

from typing import ClassVar

from adapters.errors import AdapterError


class AgentError(AdapterError):
    """Root of every error raised by ``adapters.agent``."""

    grpc_code_name: ClassVar[str] = "INTERNAL"
    """The name of the ``grpc.StatusCode`` this error travels as."""


class InvalidAgentConfig(AgentError, ValueError):
    """The agent's flags or config file describe no agent that can run; the message says why."""

    grpc_code_name = "INVALID_ARGUMENT"


class InvalidAgentRequest(AgentError, ValueError):
    """A request's fields are malformed (e.g. a peer that is not ``host[:port]``)."""

    grpc_code_name = "INVALID_ARGUMENT"


class AgentRefused(AgentError):
    """The agent refused the call: no fault calls allowed, or the wrong ``INSTANCEID``."""

    grpc_code_name = "PERMISSION_DENIED"


class AgentUnauthenticated(AgentRefused):
    """The call carried no token or the wrong one (or, with TLS, no client certificate)."""

    grpc_code_name = "UNAUTHENTICATED"


class AgentPreconditionFailed(AgentError):
    """The call does not fit the current state (e.g. wiping a running process without
    ``kill_first``, partitioning on a host with neither nft nor iptables)."""

    grpc_code_name = "FAILED_PRECONDITION"


class AgentUnreachable(AgentError):
    """No answer from the agent within the call's deadline (down, wrong address, TLS mismatch)."""

    grpc_code_name = "UNAVAILABLE"
    retriable = True


class AgentCallFailed(AgentError):
    """The agent tried and failed (a command that could not run, a process that would not die)."""

    grpc_code_name = "INTERNAL"
