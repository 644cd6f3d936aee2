"""The errors of locating an installation: no Java, no ZooKeeper, no BookKeeper.

They are cluster errors (:class:`~adapters.errors.ClusterError`): a cluster cannot start
without the installation, and callers catch them with every other reason it cannot.
"""

from __future__ import annotations

from adapters.errors import ClusterError


class JavaNotFound(ClusterError):
    """No JDK tool (``java``, ``javac``): neither in ``$JAVA_HOME/bin`` nor on ``PATH``."""


class ZooKeeperNotFound(ClusterError):
    """No ZooKeeper installation in any of the places the locator searches."""


class BookKeeperNotFound(ClusterError):
    """``BOOKKEEPER_HOME`` (or the directory passed) holds no runnable BookKeeper distribution."""
