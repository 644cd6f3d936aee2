"""The cluster's identity (its ``INSTANCEID``) that fault calls must name.

Naming it proves the caller means *this* cluster: a test aimed at a scratch cluster cannot
kill a production bookie whose agent happens to accept the same token. The id is given
explicitly (``--instance-id``) or read from ZooKeeper (``<ledgers-root>/INSTANCEID``).

Read from ZooKeeper, it is re-read on every fault call so that a reformatted cluster is
recognised, and the last value read is kept for when ZooKeeper cannot answer: an agent must
still be able to restart the very ZooKeeper server it manages after killing it.
"""

from __future__ import annotations

import hmac
import threading

from adapters.agent.errors import AgentPreconditionFailed, AgentRefused
from adapters.zookeeper.client import zookeeper_session
from adapters.zookeeper.errors import MetadataError
from adapters.zookeeper.layout import read_instance_id

ZOOKEEPER_TIMEOUT = 3.0
"""Seconds a fault call waits for ZooKeeper before falling back to the last id read."""


class ClusterIdentity:
    """Checks the ``instance_id`` of fault requests against the cluster's ``INSTANCEID``."""

    def __init__(
        self,
        *,
        instance_id: str | None = None,
        zookeeper: str | None = None,
        ledgers_root: str = "/ledgers",
    ) -> None:
        self._fixed = instance_id
        self._zookeeper = zookeeper
        self._ledgers_root = ledgers_root
        self._lock = threading.Lock()
        self._last_read: str | None = None
        self.last_error: str | None = None

    @property
    def source(self) -> str:
        if self._fixed is not None:
            return "--instance-id"
        return f"{self._zookeeper}{self._ledgers_root}/INSTANCEID"

    def current(self) -> str:
        """The cluster's INSTANCEID (fresh from ZooKeeper when it answers)."""
        if self._fixed is not None:
            return self._fixed
        if self._zookeeper is None:
            raise AgentPreconditionFailed("the agent was started without a cluster identity")
        with self._lock:
            try:
                with zookeeper_session(self._zookeeper, timeout=ZOOKEEPER_TIMEOUT) as zk:
                    self._last_read = read_instance_id(
                        zk, self._ledgers_root, timeout=ZOOKEEPER_TIMEOUT
                    )
                    self.last_error = None
            except MetadataError as exc:
                self.last_error = str(exc)
            if self._last_read is None:
                raise AgentPreconditionFailed(
                    f"cannot verify the cluster's identity: {self.last_error}. The agent has "
                    f"not yet read {self.source}; is ZooKeeper up and the cluster formatted?"
                )
            return self._last_read

    def check(self, claimed: str) -> None:
        """Raise :class:`AgentRefused` unless ``claimed`` is the cluster's INSTANCEID."""
        if not claimed:
            raise AgentRefused(
                "fault calls must name the cluster: set instance_id to its INSTANCEID "
                f"(from {self._ledgers_root}/INSTANCEID in ZooKeeper)"
            )
        actual = self.current()
        if not hmac.compare_digest(claimed.encode(), actual.encode()):
            raise AgentRefused(
                f"instance_id {claimed!r} is not this cluster's INSTANCEID (read from "
                f"{self.source}): refusing a fault aimed at another cluster"
            )
