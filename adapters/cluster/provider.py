"""What every cluster provider offers: lifecycle, endpoints and faults.

A provider starts (or connects to) a BookKeeper cluster, tells its clients where it is
(:class:`Endpoints`), and breaks it on request. The engine asks :meth:`ClusterProvider.capabilities`
which faults a provider can inject before scheduling them::

    with LocalCluster(LocalClusterOptions(bookies=3)) as cluster:
        bookie = Node.bookie(next(iter(cluster.endpoints().bookies)))
        if cluster.capabilities().supports(bookie.kind, Fault.CRASH):
            cluster.crash(bookie)
            cluster.restart(bookie)

A fault the provider cannot inject raises :class:`~adapters.cluster.errors.FaultNotSupported`
before anything is touched.
"""

from __future__ import annotations

import abc
import enum
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from adapters.cluster.errors import ClusterStateFileError, FaultNotSupported


class NodeKind(enum.Enum):
    """The two kinds of process a BookKeeper cluster is made of."""

    BOOKIE = "bookie"
    ZOOKEEPER = "zookeeper"


@dataclass(frozen=True)
class Node:
    """One process of the cluster, named by kind and id.

    Bookie ids are the ids bookies register under (``127.0.0.1:PORT`` for local clusters);
    ZooKeeper ids are ``zk<myid>``.
    """

    kind: NodeKind
    id: str

    @classmethod
    def bookie(cls, bookie_id: str) -> Node:
        return cls(NodeKind.BOOKIE, bookie_id)

    @classmethod
    def zookeeper(cls, server_id: str) -> Node:
        return cls(NodeKind.ZOOKEEPER, server_id)

    def __str__(self) -> str:
        return f"{self.kind.value} {self.id}"


class Fault(enum.Flag):
    """Faults a provider may be able to inject; a provider's capabilities are a set of these."""

    NONE = 0
    #: SIGKILL to the node's process group: no shutdown hooks, no flush.
    CRASH = enum.auto()
    #: SIGSTOP to the process group; :meth:`ClusterProvider.resume` sends SIGCONT.
    PAUSE = enum.auto()
    #: Start the node again with its data; a running node is stopped gracefully first.
    RESTART = enum.auto()
    #: Delete the node's data directories (the node is crashed first if it runs).
    WIPE = enum.auto()
    #: Crash, lose data (wipe, or lose what only an unjournaled bookie held in memory), start.
    RESTART_WITH_DATA_LOSS = enum.auto()

    ALL = CRASH | PAUSE | RESTART | WIPE | RESTART_WITH_DATA_LOSS


class DataLoss(enum.Enum):
    """How :meth:`ClusterProvider.restart_with_data_loss` loses data."""

    #: Crash, delete every data directory, start: the node comes back empty.
    WIPE = "wipe"
    #: Crash and start with the disks kept. Loses data only on a bookie running with
    #: ``journalWriteData=false``: what sat in its write cache is gone.
    UNJOURNALED = "unjournaled"


@dataclass(frozen=True)
class Capabilities:
    """The faults a provider can inject, per kind of node."""

    bookie: Fault = Fault.NONE
    zookeeper: Fault = Fault.NONE

    def faults(self, kind: NodeKind) -> Fault:
        return self.bookie if kind is NodeKind.BOOKIE else self.zookeeper

    def supports(self, kind: NodeKind, fault: Fault) -> bool:
        """True when every fault in ``fault`` can be injected on nodes of ``kind``."""
        return fault in self.faults(kind)


def _frozen_mapping(
    value: Mapping[str, tuple[str, int]],
) -> types.MappingProxyType[str, tuple[str, int]]:
    return types.MappingProxyType({key: (host, int(port)) for key, (host, port) in value.items()})


@dataclass(frozen=True)
class Endpoints:
    """Where a running cluster is, in the terms BookKeeper clients use.

    ``bookies`` maps each registered bookie id to the (host, port) it serves on;
    ``zookeeper_servers`` maps each ZooKeeper server id to its client (host, port).
    Both mappings are read-only.
    """

    zookeeper_connect: str
    ledgers_root: str
    metadata_service_uri: str
    bookies: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    zookeeper_servers: Mapping[str, tuple[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Frozen dataclasses still share the caller's dicts; copy into read-only views.
        object.__setattr__(self, "bookies", _frozen_mapping(self.bookies))
        object.__setattr__(self, "zookeeper_servers", _frozen_mapping(self.zookeeper_servers))

    def to_json(self) -> dict[str, Any]:
        return {
            "zookeeper_connect": self.zookeeper_connect,
            "ledgers_root": self.ledgers_root,
            "metadata_service_uri": self.metadata_service_uri,
            "bookies": {key: [host, port] for key, (host, port) in self.bookies.items()},
            "zookeeper_servers": {
                key: [host, port] for key, (host, port) in self.zookeeper_servers.items()
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Endpoints:
        try:
            return cls(
                zookeeper_connect=str(data["zookeeper_connect"]),
                ledgers_root=str(data["ledgers_root"]),
                metadata_service_uri=str(data["metadata_service_uri"]),
                bookies={k: (str(h), int(p)) for k, (h, p) in data["bookies"].items()},
                zookeeper_servers={
                    k: (str(h), int(p)) for k, (h, p) in data["zookeeper_servers"].items()
                },
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ClusterStateFileError(f"malformed endpoints record: {exc!r}") from exc


def metadata_service_uri(zookeeper_connect: str, ledgers_root: str) -> str:
    """The ``metadataServiceUri`` bookies and clients use (``;`` separates ZooKeeper servers)."""
    return f"zk+hierarchical://{zookeeper_connect.replace(',', ';')}{ledgers_root}"


class ClusterProvider(abc.ABC):
    """Starts (or attaches to) a cluster, reports its endpoints and injects faults.

    Subclasses implement :meth:`start`, :meth:`stop`, :meth:`endpoints`, :meth:`capabilities`
    and the ``_``-prefixed fault hooks for the faults they declare. The public fault methods
    check the declared capabilities first, so an undeclared fault always raises
    :class:`FaultNotSupported` and never half-happens.
    """

    @abc.abstractmethod
    def start(self) -> None:
        """Bring the cluster up (or connect to it); returns once it serves."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Tear everything down that :meth:`start` created. Idempotent."""

    @abc.abstractmethod
    def endpoints(self) -> Endpoints:
        """Where the cluster is right now (bookie membership as last known)."""

    @abc.abstractmethod
    def capabilities(self) -> Capabilities:
        """The faults this provider can inject."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # Faults -------------------------------------------------------------------------------

    def crash(self, node: Node) -> None:
        """Kill ``node`` with SIGKILL; it stays down until :meth:`restart`."""
        self._require(node, Fault.CRASH)
        self._crash(node)

    def pause(self, node: Node) -> None:
        """Freeze ``node`` with SIGSTOP: it holds its sockets but answers nothing."""
        self._require(node, Fault.PAUSE)
        self._pause(node)

    def resume(self, node: Node) -> None:
        """Thaw a paused ``node`` with SIGCONT."""
        self._require(node, Fault.PAUSE)
        self._resume(node)

    def restart(self, node: Node) -> None:
        """Start ``node`` again with its data (stopping it gracefully first if it runs)."""
        self._require(node, Fault.RESTART)
        self._restart(node)

    def wipe(self, node: Node) -> None:
        """Delete ``node``'s data; a running node is crashed first and stays down."""
        self._require(node, Fault.WIPE)
        self._wipe(node)

    def restart_with_data_loss(self, node: Node, how: DataLoss = DataLoss.WIPE) -> None:
        """Crash ``node``, lose data as ``how`` says, and start it again."""
        self._require(node, Fault.RESTART_WITH_DATA_LOSS)
        self._restart_with_data_loss(node, how)

    def _require(self, node: Node, fault: Fault) -> None:
        if not self.capabilities().supports(node.kind, fault):
            raise FaultNotSupported(
                f"{type(self).__name__} cannot inject {fault.name} on {node}; "
                f"it supports {self.capabilities().faults(node.kind)!r} on {node.kind.value}s. "
                "Check capabilities() before scheduling faults."
            )

    def _unsupported(self, node: Node, fault: Fault) -> FaultNotSupported:
        return FaultNotSupported(f"{type(self).__name__} has no {fault.name} for {node}")

    def _crash(self, node: Node) -> None:
        raise self._unsupported(node, Fault.CRASH)

    def _pause(self, node: Node) -> None:
        raise self._unsupported(node, Fault.PAUSE)

    def _resume(self, node: Node) -> None:
        raise self._unsupported(node, Fault.PAUSE)

    def _restart(self, node: Node) -> None:
        raise self._unsupported(node, Fault.RESTART)

    def _wipe(self, node: Node) -> None:
        raise self._unsupported(node, Fault.WIPE)

    def _restart_with_data_loss(self, node: Node, how: DataLoss) -> None:
        raise self._unsupported(node, Fault.RESTART_WITH_DATA_LOSS)
