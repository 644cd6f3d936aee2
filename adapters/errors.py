"""The root of the adapters layer's errors, :class:`AdapterError`; the root of the cluster
errors, :class:`ClusterError`, and the two that process supervision raises as well.

Every exception class defined under ``adapters/`` derives from :class:`AdapterError`
(``tests/test_error_families.py`` checks), through the root of its package's family:
:class:`ClusterError` (``cluster``, ``installations``, process supervision),
:class:`~adapters.bookkeeper.errors.WireError`, :class:`~adapters.zookeeper.errors.MetadataError`,
:class:`~adapters.agent.errors.AgentError`, :class:`~adapters.netproxy.errors.NetProxyError`,
:class:`~adapters.javaclient.errors.JavaClientError` and
:class:`~adapters.refbookie.errors.RefBookieError`.

Each class says whether trying again could help (:attr:`AdapterError.retriable`): a timeout,
a connection refused or lost, a ZooKeeper session lost, a cluster that failed to start or
crashed may go away on another attempt; bad options, a missing installation, a malformed
answer will not. The conformance targets carry the flag over when they turn an adapter's error
into a ``TargetError`` (docs/architecture.md, Errors).

The cluster errors sit below every ``adapters`` sub-package so that the packages the cluster
providers are built from (:mod:`adapters.processes`, :mod:`adapters.installations`) raise
errors under the same root as the providers themselves: a caller catches ``ClusterError``
whichever layer failed. :mod:`adapters.cluster.errors` re-exports them with the rest of the
hierarchy.
"""

from __future__ import annotations


class AdapterError(Exception):
    """Root of every error raised by ``adapters``."""

    #: Whether the same thing could succeed if tried again (a transient failure: a timeout, a
    #: lost connection or session). False unless a family or class says otherwise.
    retriable: bool = False


class ClusterError(AdapterError):
    """Root of every error raised by ``adapters.cluster`` (and by the process supervision and
    installation locating it is built on).

    Retriable unless a subclass says otherwise: a cluster that did not start, stop or restart
    (a process that exited, a port taken meanwhile, a slow machine) may well do on another
    attempt. The subclasses that name bad options, a node or fault the provider does not have,
    or a missing installation are not."""

    retriable = True


class InvalidClusterOptions(ClusterError, ValueError):
    """An argument describes no cluster that can be built (e.g. zero ZooKeeper servers)."""

    retriable = False


class NodeStateError(ClusterError):
    """The operation does not fit the node's current state (e.g. resuming a running node)."""

    retriable = False
