"""The ``local`` target: a real ZooKeeper and bookies started on this machine, stopped when the
target closes. The bookies are real BookKeeper by default (``BOOKKEEPER_HOME``, else the default
version installed from Maven Central on first use); ``BookieChoice.reference()`` runs the
reference bookie test double instead. ZooKeeper is the release named (``zookeeper``), else
``ZOOKEEPER_HOME``'s, else the default release, installed from Maven Central on first use."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapters.cluster import LocalCluster, LocalClusterOptions
from adapters.cluster.bookie_profiles import SUITE, LedgerStorage, SettingsProfile
from adapters.cluster.errors import ClusterError, NodeStateError
from adapters.cluster.provider import ClusterProvider
from adapters.cluster.scratch import file_system_of
from adapters.installations.system import (
    BOOKKEEPER,
    MODEL_CLIENT,
    BookieChoice,
    SystemUnderTest,
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


class LocalTarget(ClusterTarget):
    name = "local"

    def __init__(
        self,
        *,
        bookies: BookieChoice | None = None,
        zookeeper: ZooKeeperInstall | None = None,
        work_dir: Path | None = None,
        request_timeout: float = 10.0,
        bookie_extra: Mapping[str, str] | None = None,
        in_jvm_restarts: bool = True,
        ledger_storage: LedgerStorage | None = None,
        settings_profile: SettingsProfile = SUITE,
        planned_config: ModelConfig | None = None,
        gates: bool = False,
    ) -> None:
        """``bookies`` None: the default, :func:`choose_bookies` with no options (resolved,
        and installed if need be, when first needed). ``in_jvm_restarts``: a crash of a real
        bookie (the model's BookieRestartsEmpty) restarts the bookie inside its JVM, about
        0.5 s, rather than killing the JVM and booting a new one, about 2 s
        (:mod:`adapters.cluster.bookie_host`; docs/adapters/cluster.md says what differs).
        ``zookeeper`` None: ``ZOOKEEPER_HOME``, else the default release
        (:func:`~adapters.installations.zookeeper.locate_zookeeper`). ``ledger_storage``
        (None: the profile's) and ``settings_profile``: the bookies' settings
        (:mod:`conformance.targets.bookie_settings`); ``planned_config``: the configuration
        the target will be opened with, if known, so that the system line says the storage
        it runs before it is opened. ``gates``: the bookies' JVMs load the gate agent, and
        races may be run by a gate schedule (real BookKeeper bookies only;
        :mod:`conformance.gated_races`)."""
        super().__init__(request_timeout=request_timeout)
        self.in_jvm_restarts = in_jvm_restarts
        self.ledger_storage = ledger_storage
        self.settings_profile = settings_profile
        self.planned_config = planned_config
        self.gates = gates
        self._bookies = bookies
        self.zookeeper = zookeeper
        self.bookie_extra = dict(bookie_extra or {})
        self.work_dir = work_dir
        self._local: LocalCluster | None = None

    @property
    def bookies(self) -> BookieChoice:
        self._bookies = resolve_bookies(self._bookies)
        return self._bookies

    def _options(self, bookies: int, settings: Any = None) -> LocalClusterOptions:
        choice = self.bookies
        extra: dict[str, Any] = {} if settings is None else {"bookie_settings": settings}
        return LocalClusterOptions(
            bookies=bookies,
            work_dir=self.work_dir,
            bookkeeper_home=choice.home,
            use_bookkeeper_home_env=False,
            zookeeper_install=self.zookeeper,
            **extra,
        )

    def _start_cluster(self, cfg: ModelConfig) -> ClusterProvider:
        settings = dataclasses.replace(
            bookie_settings_for(
                cfg,
                self.bookie_extra,
                profile=self.settings_profile,
                storage=self.ledger_storage,
            ),
            in_jvm_restarts=self.in_jvm_restarts,
            gates=self.gates,
        )
        if self.gates and self.bookies.kind != BOOKKEEPER:
            raise UnsupportedConfiguration(
                "gates hold a real BookKeeper bookie's threads: the reference bookie has none"
            )
        self._local = LocalCluster(self._options(cfg.bookies, settings))
        self._local.start()
        return self._local

    def _zookeeper_client(self) -> Any:
        assert self._local is not None
        return self._local.zookeeper_client

    def system_under_test(self) -> SystemUnderTest:
        """What the target runs (or will run): nothing is started to tell."""
        cluster = self._local or LocalCluster(self._options(0))
        try:
            system = cluster.system_under_test()
        except ClusterError as exc:  # no ZooKeeper to run: open() will say so too
            system = SystemUnderTest(self.bookies.describe(), MODEL_CLIENT, f"none found ({exc})")
        return dataclasses.replace(system, bookie_settings=self.describe_bookie_settings())

    def describe_bookie_settings(self) -> str:
        """``DbLedgerStorage, settings profile pulsar`` for real bookies; "" for the reference
        bookie (a test double: it reads the keys, and has no ledger storage)."""
        if self.bookies.home is None:
            return ""
        cfg = self._cfg or self.planned_config
        return describe_settings(cfg, self.settings_profile, self.ledger_storage)

    def describe(self) -> dict[str, str]:
        implementation = self._local.bookie_implementation() if self._local else None
        described = {
            **super().describe(),
            "bookies": str(implementation.value if implementation else "unknown"),
        }
        if self._cfg is not None and self.bookies.home is not None:
            with contextlib.suppress(UnsupportedConfiguration):  # open() refused it already
                described.update(
                    settings_record(self._cfg, self.settings_profile, self.ledger_storage)
                )
        if self._local is not None:
            # Where the bookies' journals and ZooKeeper's log are synced to (tmpfs or a disk):
            # what a step's time means depends on it.
            with contextlib.suppress(NodeStateError):  # not started
                work = self._local.work_dir
                described["data_dir"] = f"{work} ({file_system_of(work)})"
        return described
