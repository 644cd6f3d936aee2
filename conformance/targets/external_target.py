"""The ``external`` target: an existing cluster, reached through its ZooKeeper.

Nothing is started or stopped. Each example writes a ledger of its own (ids from the cluster's
id generator), so a run never touches other ledgers. The bookies' configuration is the
cluster's: the model's switches (limbo, fencing on unclean shutdown) must be given to match it.
Crash faults go through fault agents (``adapters/agent``) next to the bookies, keyed by the
bookie's registered id, and only when the caller says it understands that they destroy data
(``destroy_data=True``): otherwise configurations with crashes are refused before anything is
written. The agents check the cluster's INSTANCEID (read from ZooKeeper and sent with every
destructive call) against their own, and refuse a mismatch without touching the bookie.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.agent.client import AgentClient
from adapters.agent.errors import AgentError
from adapters.cluster.external import ExternalCluster
from adapters.cluster.provider import ClusterProvider
from adapters.installations.system import MODEL_CLIENT, SystemUnderTest
from conformance.targets.base import TargetError, UnsupportedConfiguration
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
        agents: Mapping[str, AgentClient] | None = None,
        destroy_data: bool = False,
    ) -> None:
        super().__init__(request_timeout=request_timeout)
        self.agents = dict(agents or {})
        self.destroy_data = destroy_data
        self.zookeeper_connect = zookeeper_connect
        self.ledgers_root = ledgers_root
        self.allow_remote = allow_remote
        self._external: ExternalCluster | None = None

    def _start_cluster(self, cfg: ModelConfig) -> ClusterProvider:
        if cfg.max_crashes and not self.destroy_data:
            raise UnsupportedConfiguration(
                "refusing to crash bookies of a running cluster: the crash wipes the bookie's "
                "data. Pass --i-understand-this-destroys-data (and --agent for each bookie)"
            )
        if cfg.max_crashes:
            for bookie_id, agent in self.agents.items():
                try:
                    agent.status()
                except AgentError as exc:
                    raise TargetError(
                        f"the agent of bookie {bookie_id}: {exc}", retriable=exc.retriable
                    ) from exc
        self._external = ExternalCluster(
            self.zookeeper_connect,
            self.ledgers_root,
            timeout=self.request_timeout,
            allow_remote=self.allow_remote,
            agents=self.agents if cfg.max_crashes else None,
            delete_cookie_on_wipe=not cfg.limbo_on_unclean_shutdown,
        )
        self._external.start()
        return self._external

    def _choose_bookies(self, registered: list[str], cfg: ModelConfig) -> list[str]:
        if not cfg.max_crashes:
            return super()._choose_bookies(registered, cfg)
        unknown = sorted(set(self.agents) - set(registered))
        if unknown:
            raise UnsupportedConfiguration(
                f"agents were given for bookies that are not registered: {unknown} "
                f"(registered: {registered})"
            )
        return super()._choose_bookies(sorted(self.agents), cfg)

    def close(self) -> None:
        try:
            super().close()
        finally:
            for agent in self.agents.values():
                agent.close()

    def _zookeeper_client(self) -> Any:
        assert self._external is not None
        return self._external.zookeeper_client

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "zookeeper": self.zookeeper_connect}

    def system_under_test(self) -> SystemUnderTest:
        at = self.zookeeper_connect
        return SystemUnderTest(
            f"the bookies registered at {at}{self.ledgers_root} (not identified)",
            MODEL_CLIENT,
            f"ZooKeeper at {at} (version not asked)",
        )
