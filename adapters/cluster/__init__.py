"""Cluster providers: start, break and stop real BookKeeper clusters.

- :class:`LocalCluster`: ZooKeeper (standalone or ensemble) and N bookies as local processes;
  every fault of :class:`Fault` on both kinds of node.
- :class:`ExternalCluster`: attach to a running cluster; no faults.

Both implement :class:`ClusterProvider`. Errors derive from :class:`ClusterError`.
"""

from adapters.cluster.bookies import BookieImplementation, BookieSettings, LedgerStorage
from adapters.cluster.errors import (
    BookKeeperNotFound,
    ClusterError,
    ClusterStartTimeout,
    ClusterUnreachable,
    FaultNotSupported,
    InvalidClusterOptions,
    JavaNotFound,
    NodeStateError,
    ProcessExited,
    UnknownNode,
    ZooKeeperNotFound,
)
from adapters.cluster.external import ExternalCluster
from adapters.cluster.local import KeepWorkDir, LocalCluster, LocalClusterOptions
from adapters.cluster.provider import (
    Capabilities,
    ClusterProvider,
    DataLoss,
    Endpoints,
    Fault,
    Node,
    NodeKind,
)
from adapters.cluster.zookeeper import ZooKeeperTuning
from adapters.installations.zookeeper import ZooKeeperInstall, locate_zookeeper

__all__ = [
    "BookKeeperNotFound",
    "BookieImplementation",
    "BookieSettings",
    "Capabilities",
    "ClusterError",
    "ClusterProvider",
    "ClusterStartTimeout",
    "ClusterUnreachable",
    "DataLoss",
    "Endpoints",
    "ExternalCluster",
    "Fault",
    "FaultNotSupported",
    "InvalidClusterOptions",
    "JavaNotFound",
    "KeepWorkDir",
    "LedgerStorage",
    "LocalCluster",
    "LocalClusterOptions",
    "Node",
    "NodeKind",
    "NodeStateError",
    "ProcessExited",
    "UnknownNode",
    "ZooKeeperInstall",
    "ZooKeeperNotFound",
    "ZooKeeperTuning",
    "locate_zookeeper",
]
