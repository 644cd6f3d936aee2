"""Every error a cluster provider raises, under one root: :class:`ClusterError`.

Each message says what went wrong and what to do about it; log tails of the processes
involved are appended where they help.
"""

from __future__ import annotations


class ClusterError(Exception):
    """Root of every error raised by ``adapters.cluster``."""


class InvalidClusterOptions(ClusterError, ValueError):
    """An argument describes no cluster that can be built (e.g. zero ZooKeeper servers)."""


class JavaNotFound(ClusterError):
    """No ``java`` executable: neither ``$JAVA_HOME/bin/java`` nor one on ``PATH``."""


class ZooKeeperNotFound(ClusterError):
    """No ZooKeeper installation in any of the places the locator searches."""


class BookKeeperNotFound(ClusterError):
    """``BOOKKEEPER_HOME`` (or the directory passed) holds no runnable BookKeeper distribution."""


class ClusterStartTimeout(ClusterError):
    """A process did not become ready (serving, registered) within its start timeout."""


class ProcessExited(ClusterError):
    """A process exited while the provider waited for it to become ready."""


class ClusterUnreachable(ClusterError):
    """An existing cluster (``ExternalCluster``) could not be reached within its timeout."""


class UnknownNode(ClusterError):
    """A fault or query named a node the provider does not run."""


class FaultNotSupported(ClusterError):
    """The provider cannot inject this fault on this kind of node.

    Query :meth:`adapters.cluster.provider.ClusterProvider.capabilities` first.
    """


class NodeStateError(ClusterError):
    """The operation does not fit the node's current state (e.g. resuming a running node)."""


class ClusterStateFileError(ClusterError):
    """The state file of a detached cluster is missing, unreadable or malformed."""


class BookieHostUnavailable(ClusterError):
    """The bookie host (restarts a bookie inside its JVM; ``adapters/cluster/bookie_host.py``)
    could not be compiled: no ``javac``, or the BookKeeper jars lack the API it calls."""
