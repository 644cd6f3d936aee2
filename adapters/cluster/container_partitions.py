"""Network partitions of a container cluster: cutting a node off from chosen peers, healing it.

Two ways (:class:`PartitionMethod`): packet filters in the node's network namespace, which
cut chosen peers only and leave the host-side client's path alone, or disconnecting the
container from the cluster network, which works with any image. What cuts a node off right
now (:class:`NodeCut`) is kept on the node, so a restart can void its filters and
:meth:`~adapters.cluster.containers.ContainerCluster.partitioned_from` can report them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from adapters.cluster.container_netns import run_in_network_namespace
from adapters.cluster.errors import ClusterError, FaultNotSupported


class PartitionMethod(enum.Enum):
    """How :meth:`~adapters.cluster.containers.ContainerCluster.partition` cuts a node off."""

    #: iptables DROP rules in the node's network namespace for the peers' addresses. Precise
    #: (chosen peers only; the host-side client still reaches the node). Runs the host's
    #: iptables through nsenter when the engine is local and we are root, else ``iptables``
    #: in the image (the local images have it, the official ones lack it).
    PACKET_FILTER = "packet-filter"
    #: Disconnect the container from the cluster network: it loses every peer, and its
    #: published port too while cut off. Works with any image.
    DISCONNECT = "disconnect"


@dataclass
class NodeCut:
    """What cuts one node off right now."""

    #: Peers' addresses this node drops packets for (packet-filter partitions).
    dropped: tuple[str, ...] = ()
    disconnected: bool = False
    #: Where the node was on the network before it was disconnected, to come back there.
    address_before_disconnect: str = ""


class PartitionedNode(Protocol):
    """A node as partitions see it: its name on the cluster network, its container (the
    docker SDK's), and what cuts it off."""

    @property
    def name(self) -> str: ...

    @property
    def wrapped(self) -> Any: ...

    @property
    def cut(self) -> NodeCut: ...


def network_address(container: Any, network_name: str) -> str:
    """The container's address on ``network_name`` (empty while disconnected from it)."""
    container.reload()
    networks = container.attrs.get("NetworkSettings", {}).get("Networks", {}) or {}
    return str((networks.get(network_name) or {}).get("IPAddress") or "")


class NetworkPartitions:
    """Cuts nodes of one cluster network off from each other, and heals them.

    ``network`` is the docker SDK's network object named ``network_name``; ``docker_host``
    says whether the host's iptables can enter a container's namespace directly.
    """

    def __init__(self, network: Any, network_name: str, docker_host: str) -> None:
        self.network = network
        self.network_name = network_name
        self.docker_host = docker_host

    def cut_off(
        self,
        node: PartitionedNode,
        peers: Iterable[PartitionedNode],
        method: PartitionMethod,
        *,
        every_peer: bool,
    ) -> None:
        """Cut ``node`` off from ``peers`` (``every_peer``: they are all the other nodes)."""
        if method is PartitionMethod.DISCONNECT:
            if not every_peer:
                raise FaultNotSupported(
                    "a disconnect partition cuts a node off from everyone; use "
                    "PartitionMethod.PACKET_FILTER to cut it off from chosen peers"
                )
            if not node.cut.disconnected:
                node.cut.address_before_disconnect = network_address(
                    node.wrapped, self.network_name
                )
                self.network.disconnect(node.wrapped, force=True)
                node.cut.disconnected = True
            return
        addresses = tuple(
            address
            for peer in peers
            if (address := network_address(peer.wrapped, self.network_name))
        )
        new = [address for address in addresses if address not in node.cut.dropped]
        for address in new:
            self._iptables(node, "-I", address)
        node.cut.dropped = node.cut.dropped + tuple(new)

    def heal(self, node: PartitionedNode) -> None:
        """Undo every partition of ``node``."""
        if node.cut.disconnected:
            # Back on its old address: peers that resolved its name before (ZooKeeper servers
            # keep the addresses of their quorum peers) reach it again.
            self.network.connect(
                node.wrapped,
                aliases=[node.name],
                ipv4_address=node.cut.address_before_disconnect or None,
            )
            node.cut.disconnected = False
        for address in node.cut.dropped:
            self._iptables(node, "-D", address)
        node.cut.dropped = ()

    def _iptables(self, node: PartitionedNode, action: str, address: str) -> None:
        for chain, direction in (("INPUT", "-s"), ("OUTPUT", "-d")):
            command = ["iptables", "-w", "5", action, chain, direction, address, "-j", "DROP"]
            code, output = run_in_network_namespace(
                node.wrapped, command, docker_host=self.docker_host
            )
            if code != 0:
                raise ClusterError(
                    f"{' '.join(command)} in {node.name} failed ({code}): {output.strip()}. "
                    "Without iptables (on this host or in the image) partitions need "
                    "PartitionMethod.DISCONNECT"
                )


__all__ = [
    "NetworkPartitions",
    "NodeCut",
    "PartitionMethod",
    "PartitionedNode",
    "network_address",
]
