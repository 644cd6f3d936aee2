"""Every error a cluster provider raises, under one root: :class:`ClusterError`.

Each message says what went wrong and what to do about it; log tails of the processes
involved are appended where they help. The root, and the errors that the layers below the
providers raise as well, are defined in those layers and re-exported here, so that this module
still names the whole hierarchy: :mod:`adapters.errors` (the root, invalid options and node
state, which process supervision raises) and :mod:`adapters.installations.errors` (no Java,
ZooKeeper or BookKeeper).
"""

from __future__ import annotations

from adapters.errors import ClusterError, InvalidClusterOptions, NodeStateError
from adapters.installations.errors import BookKeeperNotFound, JavaNotFound, ZooKeeperNotFound


class ClusterStartTimeout(ClusterError):
    """A process did not become ready (serving, registered) within its start timeout."""


class ProcessExited(ClusterError):
    """A process exited while the provider waited for it to become ready."""


class ClusterUnreachable(ClusterError):
    """An existing cluster (``ExternalCluster``) could not be reached within its timeout."""


class UnknownNode(ClusterError):
    """A fault or query named a node the provider does not run."""

    retriable = False


class FaultNotSupported(ClusterError):
    """The provider cannot inject this fault on this kind of node.

    Query :meth:`adapters.cluster.provider.ClusterProvider.capabilities` first.
    """

    retriable = False


class ClusterStateFileError(ClusterError):
    """The state file of a detached cluster is missing, unreadable or malformed."""

    retriable = False


class BookieHostUnavailable(ClusterError):
    """The bookie host (restarts a bookie inside its JVM; ``adapters/cluster/bookie_host.py``)
    could not be compiled: no ``javac``, or the BookKeeper jars lack the API it calls."""

    retriable = False


__all__ = [
    "BookKeeperNotFound",
    "BookieHostUnavailable",
    "ClusterError",
    "ClusterStartTimeout",
    "ClusterStateFileError",
    "ClusterUnreachable",
    "FaultNotSupported",
    "InvalidClusterOptions",
    "JavaNotFound",
    "NodeStateError",
    "ProcessExited",
    "UnknownNode",
    "ZooKeeperNotFound",
]
