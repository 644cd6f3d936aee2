"""The ``local`` target: a real ZooKeeper and bookies started on this machine (reference
bookies, or a real BookKeeper from ``BOOKKEEPER_HOME``), stopped when the target closes."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapters.cluster import LocalCluster, LocalClusterOptions
from adapters.cluster.provider import ClusterProvider
from conformance.targets.cluster_target import ClusterTarget, bookie_settings_for
from model.bookkeeper.config import ModelConfig


class LocalTarget(ClusterTarget):
    name = "local"

    def __init__(
        self,
        *,
        bookkeeper_home: Path | None = None,
        work_dir: Path | None = None,
        request_timeout: float = 10.0,
        bookie_extra: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(request_timeout=request_timeout)
        self.bookkeeper_home = bookkeeper_home
        self.bookie_extra = dict(bookie_extra or {})
        self.work_dir = work_dir
        self._local: LocalCluster | None = None

    def _start_cluster(self, cfg: ModelConfig) -> ClusterProvider:
        settings = bookie_settings_for(cfg, self.bookie_extra)
        self._local = LocalCluster(
            LocalClusterOptions(
                bookies=cfg.bookies,
                work_dir=self.work_dir,
                bookkeeper_home=self.bookkeeper_home,
                use_bookkeeper_home_env=self.bookkeeper_home is None,
                bookie_settings=settings,
            )
        )
        self._local.start()
        return self._local

    def _zookeeper_client(self) -> Any:
        assert self._local is not None
        return self._local.zookeeper_client

    def describe(self) -> dict[str, str]:
        implementation = self._local.bookie_implementation() if self._local else None
        return {
            **super().describe(),
            "bookies": str(implementation.value if implementation else "unknown"),
        }
