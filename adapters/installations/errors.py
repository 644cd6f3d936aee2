"""The errors of locating an installation: no Java, no ZooKeeper, no BookKeeper, and an install
that was complete and is broken now.

They are cluster errors (:class:`~adapters.errors.ClusterError`): a cluster cannot start
without the installation, and callers catch them with every other reason it cannot. Unlike
most cluster errors they are not retriable: the installation is no more there on a second try.
"""

from __future__ import annotations

from adapters.errors import ClusterError


class JavaNotFound(ClusterError):
    """No JDK tool (``java``, ``javac``): neither in ``$JAVA_HOME/bin`` nor on ``PATH``."""

    retriable = False


class ZooKeeperNotFound(ClusterError):
    """No ZooKeeper installation in any of the places the locator searches."""

    retriable = False


class BookKeeperNotFound(ClusterError):
    """``BOOKKEEPER_HOME`` (or the directory passed) holds no runnable BookKeeper distribution."""

    retriable = False


class BrokenInstallation(ClusterError):
    """An install bkconform made is no longer complete (a jar gone or changed, a class its
    programs need missing); the message names the command that reinstalls it. Each product's
    own kind also derives from its install error (``BookKeeperInstallBroken``,
    ``ZooKeeperInstallBroken``): callers that fall back to another installation on an
    install error must not on this one, which the user has to repair."""

    retriable = False
