"""Running the agent: the gRPC server, the managed process, and an orderly shutdown.

:func:`serve` binds the port, starts the managed process (unless ``autostart`` is off), prints
``agent ready on HOST:PORT`` on stdout, and runs until SIGTERM or SIGINT. On the way out it
stops answering calls, removes any partition it applied, and stops the managed process
(SIGTERM, then SIGKILL after the stop timeout): the agent leaves nothing behind, except
after SIGKILL, which no process can handle (the process then lives on in its own session).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import grpc

from adapters.agent.config import AgentConfig, token_file_is_private
from adapters.agent.errors import AgentCallFailed, AgentError
from adapters.agent.firewall import Partitioner
from adapters.agent.identity import ClusterIdentity
from adapters.agent.proto import agent_pb2_grpc as pb_grpc
from adapters.agent.service import AUDIT_LOGGER, AgentService
from adapters.agent.supervisor import Supervisor
from adapters.processes import install_exit_hooks

log = logging.getLogger("bkconform.agent")

WORKERS = 4
SHUTDOWN_GRACE = 2.0


def server_credentials(config: AgentConfig) -> Any:
    """gRPC server credentials for ``config.tls`` (client certificates required with a CA)."""
    assert config.tls is not None
    tls = config.tls
    client_ca = tls.client_ca.read_bytes() if tls.client_ca is not None else None
    return grpc.ssl_server_credentials(
        [(tls.key.read_bytes(), tls.cert.read_bytes())],
        root_certificates=client_ca,
        require_client_auth=client_ca is not None,
    )


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass
class RunningAgent:
    """A started agent: its gRPC server and what it controls."""

    config: AgentConfig
    server: Any
    port: int
    supervisor: Supervisor
    partitioner: Partitioner

    @property
    def address(self) -> str:
        return format_address(self.config.listen_host, self.port)

    def stop(self) -> None:
        """Stop answering, heal any partition, stop the process; each step runs regardless."""
        errors: list[str] = []
        self.server.stop(SHUTDOWN_GRACE).wait(SHUTDOWN_GRACE + 1)
        try:
            self.partitioner.heal_if_applied()
        except AgentError as exc:
            errors.append(f"heal: {exc}")
        try:
            self.supervisor.stop()
        except AgentError as exc:
            errors.append(f"stop process: {exc}")
        if errors:
            raise AgentCallFailed("; ".join(errors))


def identity_source(config: AgentConfig) -> str:
    if config.instance_id is not None:
        return "--instance-id"
    return f"{config.zookeeper}{config.ledgers_root}/INSTANCEID" if config.zookeeper else "none"


def start_agent(config: AgentConfig) -> RunningAgent:
    """Bind the port and start serving (and the managed process, with ``autostart``)."""
    supervisor = Supervisor(config)
    identity = ClusterIdentity(
        instance_id=config.instance_id,
        zookeeper=config.zookeeper,
        ledgers_root=config.ledgers_root,
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=WORKERS))
    address = format_address(config.listen_host, config.listen_port)
    try:
        if config.tls is None:
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, server_credentials(config))
    except RuntimeError as exc:
        raise AgentCallFailed(f"cannot listen on {address}: {exc}") from exc
    if not port:
        raise AgentCallFailed(f"cannot listen on {address} (in use, or not a local address?)")
    partitioner = Partitioner(config.firewall, exempt_port=port)
    service = AgentService(config, supervisor, partitioner, identity)
    # grpcio-tools writes no annotations: the generated registration function is untyped.
    pb_grpc.add_AgentServicer_to_server(service, server)  # type: ignore[no-untyped-call]
    server.start()
    agent = RunningAgent(config, server, port, supervisor, partitioner)
    if config.autostart:
        try:
            supervisor.start()
        except AgentError:
            server.stop(None)
            raise
    return agent


def configure_logging(config: AgentConfig) -> None:
    """Agent and audit lines to stderr, and to ``config.audit_log`` when given."""
    formatter = logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s")
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if config.audit_log is not None:
        config.audit_log.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(config.audit_log, encoding="utf-8"))
    for name in ("bkconform.agent", AUDIT_LOGGER):
        logger = logging.getLogger(name)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        for handler in handlers:
            handler.setFormatter(formatter)
            logger.addHandler(handler)


def serve(config: AgentConfig, token_file: Path | None = None) -> int:
    """Run the agent until SIGTERM/SIGINT; the exit status for ``python -m adapters.agent``."""
    configure_logging(config)
    stop_requested = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop_requested.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, request_stop)
    # The managed process is also stopped by these hooks (they run before request_stop), so
    # it does not outlive the agent even if the orderly shutdown below never runs.
    install_exit_hooks()
    if token_file is not None and not token_file_is_private(token_file):
        log.warning("token file %s is readable by group or others: chmod 600 it", token_file)
    agent = start_agent(config)
    log.info(
        "listening on %s (tls=%s, client certs=%s), fault calls %s, identity %s, command %s",
        agent.address,
        config.tls is not None,
        config.tls is not None and config.tls.client_ca is not None,
        "ALLOWED" if config.allow_destructive else "refused",
        identity_source(config),
        " ".join(config.command),
    )
    print(f"agent ready on {agent.address}", flush=True)
    try:
        while not stop_requested.wait(0.5):
            pass
        log.info("stopping")
    finally:
        agent.stop()
    log.info("stopped")
    return 0
