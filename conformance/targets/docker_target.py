"""The ``docker`` target: ZooKeeper and bookies in containers (testcontainers, on a Docker
engine or podman's Docker API), started for the run and removed when the target closes.

The bookies are chosen as for the ``local`` target
(:func:`~adapters.installations.system.choose_bookies`): real BookKeeper by default, in an
image built here from the project's Debian base, Debian's Java 17 and the chosen version's
install from Maven Central (``docker/bookkeeper``); ``BookieChoice.reference()`` runs the
reference bookie test double in its image instead. ZooKeeper is Debian's package in a local
image, or a release of your choice (``zookeeper``: an install from Maven Central) in an image
built here from it (``docker/zookeeper-release``). ``official=True`` runs ``apache/bookkeeper``
and ``zookeeper`` from a registry instead (not reachable on this project's machines). The engine
must answer already, or podman must be installed (its API service is then started here and
stopped again on close).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Mapping
from typing import Any

from adapters.cluster.bookie_profiles import SUITE, LedgerStorage, SettingsProfile
from adapters.cluster.container_engine import EnginePaths, ensure_engine, stop_service
from adapters.cluster.container_images import (
    ImageBuilder,
    ImageSet,
    bookkeeper_image_tag,
    install_version,
    local_image_tags,
    official_images,
    zookeeper_install_version,
)
from adapters.cluster.containers import ContainerCluster, ContainerClusterOptions
from adapters.cluster.errors import ClusterError
from adapters.cluster.provider import ClusterProvider
from adapters.installations.system import (
    MODEL_CLIENT,
    BookieChoice,
    SystemUnderTest,
    describe_reference_bookie,
)
from adapters.installations.zookeeper import ZooKeeperInstall
from conformance.targets.base import UnsupportedConfiguration
from conformance.targets.bookie_settings import (
    bookie_settings_for,
    describe_settings,
    settings_record,
)
from conformance.targets.cluster_target import ClusterTarget, resolve_bookies
from model.bookkeeper.config import ModelConfig

#: The ``apache/bookkeeper`` tag of ``official=True`` when none is given.
OFFICIAL_BOOKKEEPER_VERSION = "4.17.2"


def _build_progress(line: str) -> None:
    # Building an image takes minutes on a busy machine: say so. An image that is already
    # there is the common case and says nothing.
    if "up to date" not in line and "is present" not in line:
        print(line, file=sys.stderr, flush=True)


class DockerTarget(ClusterTarget):
    name = "docker"

    def __init__(
        self,
        *,
        official: bool = False,
        official_version: str = OFFICIAL_BOOKKEEPER_VERSION,
        bookies: BookieChoice | None = None,
        zookeeper: ZooKeeperInstall | None = None,
        zookeepers: int = 1,
        request_timeout: float = 10.0,
        bookie_extra: Mapping[str, str] | None = None,
        ledger_storage: LedgerStorage | None = None,
        settings_profile: SettingsProfile = SUITE,
        planned_config: ModelConfig | None = None,
    ) -> None:
        """``bookies`` None: the default, :func:`choose_bookies` with no options (resolved, and
        installed if need be, when first needed). Ignored with ``official``, which runs
        ``apache/bookkeeper:<official_version>``. ``zookeeper`` None: Debian's package; else
        that install (it must have a home directory: a release installed from Maven Central or
        an unpacked distribution) in its own image. ``ledger_storage``, ``settings_profile``
        and ``planned_config``: as the local target's."""
        super().__init__(request_timeout=request_timeout)
        self.ledger_storage = ledger_storage
        self.settings_profile = settings_profile
        self.planned_config = planned_config
        if zookeeper is not None and (official or zookeeper.home is None):
            raise ValueError(
                f"{zookeeper.describe()}: a ZooKeeper of your choice runs in a local image "
                "built from an install directory (not with the official images)"
            )
        self.zookeeper = zookeeper
        self.official = official
        self.official_version = official_version
        self._bookies = bookies
        self.zookeepers = zookeepers
        self.bookie_extra = dict(bookie_extra or {})
        self._containers: ContainerCluster | None = None
        self._paths = EnginePaths.default()
        self._started_service = False
        self._images: ImageSet | None = None

    @property
    def bookies(self) -> BookieChoice:
        self._bookies = resolve_bookies(self._bookies)
        return self._bookies

    def _image_set(self, builder: ImageBuilder) -> ImageSet:
        if self.official:
            return official_images(self.official_version)
        choice = self.bookies
        if choice.home is None:
            images = builder.ensure_all().image_set()
        else:
            images = builder.ensure_bookkeeper(choice.home, progress=True)
        if self.zookeeper is not None:
            assert self.zookeeper.home is not None  # checked in __init__
            images = dataclasses.replace(
                images, zookeeper=builder.ensure_zookeeper(self.zookeeper.home)
            )
        return images

    def _start_cluster(self, cfg: ModelConfig) -> ClusterProvider:
        settings = bookie_settings_for(
            cfg, self.bookie_extra, profile=self.settings_profile, storage=self.ledger_storage
        )
        setup = ensure_engine(self._paths, install=False)
        self._started_service = setup.started_pid is not None
        self._images = self._image_set(ImageBuilder(setup.engine, log=_build_progress))
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
        """What runs (or will run: the tags of local images are computed without an engine),
        and the bookies' settings."""
        system = self._system_under_test()
        if not self.official and self.bookies.home is None:
            return system  # the reference bookie, a test double: no ledger storage to name
        cfg = self._cfg or self.planned_config
        return dataclasses.replace(
            system,
            bookie_settings=describe_settings(cfg, self.settings_profile, self.ledger_storage),
        )

    def _system_under_test(self) -> SystemUnderTest:
        images = self._images
        if images is None and self.official:
            images = official_images(self.official_version)
        zookeeper = self._describe_zookeeper(images)
        if images is not None and images.bookie_kind == "bookkeeper":
            return SystemUnderTest(f"BookKeeper in {images.bookie}", MODEL_CLIENT, zookeeper)
        choice = self.bookies
        if choice.home is None:
            try:
                where = images.bookie if images is not None else local_image_tags().refbookie
            except ClusterError:  # no docker/ files or a dependency missing: open() says so
                where = "a local image"
            return SystemUnderTest(
                f"{describe_reference_bookie()} in {where}", MODEL_CLIENT, zookeeper
            )
        try:
            version = install_version(choice.home)
            tag = (
                images.bookie
                if images is not None
                else bookkeeper_image_tag(choice.home, local_image_tags().base)
            )
        except ClusterError as exc:  # open() will say so too
            return SystemUnderTest(
                f"{choice.describe()} in a local image ({exc})", MODEL_CLIENT, zookeeper
            )
        return SystemUnderTest(
            f"BookKeeper {version} (container image {tag})", MODEL_CLIENT, zookeeper
        )

    def _describe_zookeeper(self, images: ImageSet | None) -> str:
        if images is not None and images.bookie_kind == "bookkeeper":
            return f"ZooKeeper in {images.zookeeper}"
        if self.zookeeper is not None and self.zookeeper.home is not None:
            try:
                version = zookeeper_install_version(self.zookeeper.home)
            except ClusterError as exc:  # open() will say so too
                return f"{self.zookeeper.describe()} in a local image ({exc})"
            where = f" (container image {images.zookeeper})" if images is not None else ""
            return f"ZooKeeper {version}{where}"
        try:
            tag = images.zookeeper if images is not None else local_image_tags().zookeeper
        except ClusterError:  # no docker/ files: open() will say so
            return "ZooKeeper from Debian's package in a local image"
        return f"ZooKeeper from Debian's package (container image {tag})"

    def describe(self) -> dict[str, str]:
        images = self._images
        described = {
            **super().describe(),
            "zookeeper_image": images.zookeeper if images else "unknown",
            "bookie_image": images.bookie if images else "unknown",
            "bookies": images.bookie_kind if images else "unknown",
        }
        if self._cfg is not None and (self.official or self.bookies.home is not None):
            with contextlib.suppress(UnsupportedConfiguration):  # open() refused it already
                described.update(
                    settings_record(self._cfg, self.settings_profile, self.ledger_storage)
                )
        return described
