"""The root of the cluster errors, :class:`ClusterError`, and the two that process supervision
raises as well.

They sit below every ``adapters`` sub-package so that the packages the cluster providers are
built from (:mod:`adapters.processes`, :mod:`adapters.installations`) raise errors under the
same root as the providers themselves: a caller catches ``ClusterError`` whichever layer
failed. :mod:`adapters.cluster.errors` re-exports them with the rest of the hierarchy.
"""

from __future__ import annotations


class ClusterError(Exception):
    """Root of every error raised by ``adapters.cluster`` (and by the process supervision and
    installation locating it is built on)."""


class InvalidClusterOptions(ClusterError, ValueError):
    """An argument describes no cluster that can be built (e.g. zero ZooKeeper servers)."""


class NodeStateError(ClusterError):
    """The operation does not fit the node's current state (e.g. resuming a running node)."""
