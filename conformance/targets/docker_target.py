"""The ``docker`` target: ZooKeeper and bookies in containers (testcontainers, on a Docker
engine or podman's Docker API), started for the run and removed when the target closes.

By default the images built here (``bkconform docker setup``: a Debian base, ZooKeeper from
Debian's package, the reference bookie); ``official=True`` runs ``apache/bookkeeper`` and
``zookeeper`` from a registry instead (not reachable on this project's machines). The engine
must answer already, or podman must be installed (its API service is then started here and
stopped again on close).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.cluster.container_engine import EnginePaths, ensure_engine, stop_service
from adapters.cluster.container_images import ImageBuilder, ImageSet, official_images
from adapters.cluster.containers import ContainerCluster, ContainerClusterOptions
from adapters.cluster.provider import ClusterProvider
from adapters.installations.system import MODEL_CLIENT, SystemUnderTest, describe_reference_bookie
from conformance.targets.cluster_target import ClusterTarget, bookie_settings_for
from model.bookkeeper.config import ModelConfig


class DockerTarget(ClusterTarget):
    name = "docker"

    def __init__(
        self,
        *,
        official: bool = False,
        zookeepers: int = 1,
        request_timeout: float = 10.0,
        bookie_extra: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(request_timeout=request_timeout)
        self.official = official
        self.zookeepers = zookeepers
        self.bookie_extra = dict(bookie_extra or {})
        self._containers: ContainerCluster | None = None
        self._paths = EnginePaths.default()
        self._started_service = False
        self._images: ImageSet | None = None

    def _start_cluster(self, cfg: ModelConfig) -> ClusterProvider:
        settings = bookie_settings_for(cfg, self.bookie_extra)
        setup = ensure_engine(self._paths, install=False)
        self._started_service = setup.started_pid is not None
        self._images = (
            official_images()
            if self.official
            else ImageBuilder(setup.engine).ensure_all().image_set()
        )
        self._containers = ContainerCluster(
            ContainerClusterOptions(
                bookies=cfg.bookies,
                zookeepers=self.zookeepers,
                images=self._images,
                engine=setup.engine,
                bookie_settings=settings,
            )
        )
        self._containers.start()
        return self._containers

    def _zookeeper_client(self) -> Any:
        assert self._containers is not None
        return self._containers.zookeeper_client

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._started_service:
                self._started_service = False
                stop_service(self._paths)

    def system_under_test(self) -> SystemUnderTest:
        images = self._images or (official_images() if self.official else None)
        if images is None:
            return SystemUnderTest(
                f"{describe_reference_bookie()} in a local image",
                MODEL_CLIENT,
                "ZooKeeper from Debian's package in a local image",
            )
        bookies = (
            f"{describe_reference_bookie()} in {images.bookie}"
            if images.bookie_kind == "reference"
            else f"BookKeeper in {images.bookie}"
        )
        return SystemUnderTest(bookies, MODEL_CLIENT, f"ZooKeeper in {images.zookeeper}")

    def describe(self) -> dict[str, str]:
        images = self._images
        return {
            **super().describe(),
            "zookeeper_image": images.zookeeper if images else "unknown",
            "bookie_image": images.bookie if images else "unknown",
        }
