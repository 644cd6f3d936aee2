"""The ``external`` target: an existing cluster, reached through its ZooKeeper.

Nothing is started or stopped. Each example writes a ledger of its own (ids from the cluster's
id generator), so a run never touches other ledgers. The bookies' configuration is the
cluster's: the model's switches (limbo, fencing on unclean shutdown) must be given to match it.
Crash faults need a provider that can inject them on that cluster (the fault agent); without
one, configurations with crashes are refused before anything is written.
"""

from __future__ import annotations

from typing import Any

from adapters.cluster.external import ExternalCluster
from adapters.cluster.provider import ClusterProvider
from conformance.targets.cluster_target import ClusterTarget
from model.bookkeeper.config import ModelConfig


class ExternalTarget(ClusterTarget):
    name = "external"

    def __init__(
        self,
        zookeeper_connect: str,
        *,
        ledgers_root: str = "/ledgers",
        allow_remote: bool = False,
        request_timeout: float = 10.0,
    ) -> None:
        super().__init__(request_timeout=request_timeout)
        self.zookeeper_connect = zookeeper_connect
        self.ledgers_root = ledgers_root
        self.allow_remote = allow_remote
        self._external: ExternalCluster | None = None

    def _start_cluster(self, cfg: ModelConfig) -> ClusterProvider:
        self._external = ExternalCluster(
            self.zookeeper_connect,
            self.ledgers_root,
            timeout=self.request_timeout,
            allow_remote=self.allow_remote,
        )
        self._external.start()
        return self._external

    def _zookeeper_client(self) -> Any:
        assert self._external is not None
        return self._external.zookeeper_client

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "zookeeper": self.zookeeper_connect}
