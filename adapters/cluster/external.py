"""``ExternalCluster``: a provider for a cluster someone else runs.

It connects to the cluster's ZooKeeper, checks that the ledgers root is formatted, and
discovers bookies from their registrations. It injects no faults (its capabilities are
empty) until a fault agent is configured for it.

Guard: only loopback hosts are accepted unless ``allow_remote=True`` is passed, so a test
run never touches a shared cluster by accident.
"""

from __future__ import annotations

import contextlib
import ipaddress
from typing import Any

from adapters.cluster.errors import ClusterError, ClusterUnreachable, NodeStateError
from adapters.cluster.provider import (
    Capabilities,
    ClusterProvider,
    Endpoints,
    metadata_service_uri,
)
from adapters.cluster.zookeeper import server_mode
from adapters.zookeeper.client import connect_zookeeper
from adapters.zookeeper.errors import ClusterNotFormatted, MetadataError, ZooKeeperUnreachable
from adapters.zookeeper.registration import list_bookies


def parse_connect_string(connect: str) -> list[tuple[str, int]]:
    """``"h1:2181,h2:2182"`` → ``[("h1", 2181), ("h2", 2182)]`` (a chroot suffix is refused)."""
    servers = []
    for part in connect.split(","):
        host, sep, port = part.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or "/" in port:
            raise ClusterError(
                f"ZooKeeper connect string {connect!r}: {part!r} is not host:port "
                "(give the ledgers root separately, not as a chroot)"
            )
        servers.append((host, int(port)))
    return servers


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ExternalCluster(ClusterProvider):
    """Attach to a running cluster through its ZooKeeper (see the module docstring)."""

    def __init__(
        self,
        zookeeper_connect: str,
        ledgers_root: str = "/ledgers",
        *,
        timeout: float = 10.0,
        allow_remote: bool = False,
    ) -> None:
        self.zookeeper_connect = zookeeper_connect
        self.ledgers_root = ledgers_root
        self.timeout = timeout
        self.servers = parse_connect_string(zookeeper_connect)
        remote = [host for host, _ in self.servers if not _is_loopback(host)]
        if remote and not allow_remote:
            raise ClusterError(
                f"refusing non-loopback ZooKeeper hosts {remote}: pass allow_remote=True to "
                "run against a cluster on other machines"
            )
        self._zk: Any = None

    def start(self) -> None:
        if self._zk is not None:
            raise NodeStateError("ExternalCluster.start() called twice")
        try:
            self._zk = connect_zookeeper(self.zookeeper_connect, timeout=self.timeout)
        except ZooKeeperUnreachable as exc:
            raise ClusterUnreachable(
                f"cannot reach ZooKeeper at {self.zookeeper_connect} within {self.timeout}s; "
                "check the connect string and that a server answers `ruok` with `imok`"
            ) from exc
        try:
            self._discover()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        zk, self._zk = self._zk, None
        if zk is not None:
            with contextlib.suppress(Exception):
                zk.stop()
            with contextlib.suppress(Exception):
                zk.close()

    @property
    def zookeeper_client(self) -> Any:
        """Our connected kazoo client to the cluster's ZooKeeper."""
        if self._zk is None:
            raise NodeStateError("ExternalCluster is not started")
        return self._zk

    def _discover(self) -> dict[str, tuple[str, int]]:
        if self._zk is None:
            raise NodeStateError("ExternalCluster is not started")
        try:
            registered = list_bookies(self._zk, self.ledgers_root, timeout=self.timeout)
        except ClusterNotFormatted as exc:
            raise ClusterError(
                f"ZooKeeper at {self.zookeeper_connect} has no BookKeeper cluster under "
                f"{self.ledgers_root}: {exc}. Check the ledgers root (zkLedgersRootPath)"
            ) from exc
        except MetadataError as exc:
            raise ClusterUnreachable(f"listing bookies failed: {exc}") from exc
        return {bookie_id: (a.host, a.port) for bookie_id, a in registered.items()}

    def endpoints(self) -> Endpoints:
        """Endpoints with the bookies registered right now."""
        return Endpoints(
            zookeeper_connect=self.zookeeper_connect,
            ledgers_root=self.ledgers_root,
            metadata_service_uri=metadata_service_uri(self.zookeeper_connect, self.ledgers_root),
            bookies=self._discover(),
            zookeeper_servers={f"{host}:{port}": (host, port) for host, port in self.servers},
        )

    def capabilities(self) -> Capabilities:
        return Capabilities()

    def zookeeper_modes(self) -> dict[str, str | None]:
        """Each server's role from ``srvr`` (None when it does not answer or does not serve).

        Needs the server to allow the ``srvr`` four-letter word (``4lw.commands.whitelist``).
        """
        return {f"{host}:{port}": server_mode(host, port) for host, port in self.servers}
