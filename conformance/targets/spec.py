"""``TargetSpec``: the whole description of a run's target as one frozen value (Jepsen's test
map), and the one place a target is built from it.

The CLI (``bkconform run``, ``scenario``, ``qualify``), the pytest plugin (``--bk-target``)
and the Spark shards all describe their target with a ``TargetSpec`` and call ``build()``, so
every target and every fault capability (docker, fault agents) is available from each of them.
A spec is plain data (strings, numbers, tuples): it travels to Spark executors as it is, and
each executor builds its own target from it.

A spec is checked when it is made: options that contradict each other raise ``ValueError`` at
once, naming the option, before anything is started.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.cluster.bookie_profiles import (
    DEFAULT_PROFILE,
    PROFILES,
    STORAGE_CHOICES,
    LedgerStorage,
    SettingsProfile,
    profile_named,
    storage_named,
)
from adapters.cluster.errors import ClusterError
from adapters.installations.system import BOOKIE_KINDS, BOOKKEEPER, REFERENCE, BookieChoice
from adapters.installations.system import choose_bookies as choose_installed_bookies
from adapters.installations.zookeeper import ZooKeeperInstall, locate_zookeeper
from adapters.refbookie.config import FAULTY_MODES
from conformance.target_kinds import TARGET_KINDS
from conformance.targets.base import Target, UnsupportedConfiguration
from conformance.targets.bookie_settings import StorageChoice, choose_storage, settings_record
from model.bookkeeper.config import ModelConfig

#: The targets whose bookies the suite configures itself (the storage and profile apply).
CONFIGURED_BOOKIES = ("local", "docker")


def _verb(options: list[str], verb: str) -> str:
    """``configures`` for one option, ``configure`` for several."""
    return verb if len(options) > 1 else verb + "s"


@dataclass(frozen=True)
class AgentAddress:
    """A fault agent next to a bookie (``--agent BOOKIE_ID=HOST:PORT``)."""

    bookie_id: str
    host: str
    port: int

    @classmethod
    def parse(cls, item: str) -> AgentAddress:
        bookie_id, sep, address = item.rpartition("=")
        host, colon, port = address.rpartition(":")
        if not sep or not bookie_id or not colon or not host or not port.isdigit():
            raise ValueError(f"--agent {item!r}: expected BOOKIE_ID=HOST:PORT")
        return cls(bookie_id, host.strip("[]"), int(port))


@dataclass(frozen=True)
class TargetSpec:
    """What a run runs against. Fields that do not apply to ``kind`` keep their defaults."""

    kind: str = "model"
    #: ``local`` and ``docker``: real BookKeeper (``bookkeeper``: a version, installed on first
    #: use, or a distribution directory; else ``bookkeeper_home``; else ``BOOKKEEPER_HOME``;
    #: else the default version) or the ``reference`` bookie (a test double).
    bookie_kind: str = BOOKKEEPER
    bookkeeper: str | None = None
    bookkeeper_home: str | None = None
    #: ``local`` with real bookies: a crash restarts the bookie inside its JVM (False: a new
    #: process, ``--process-restarts``).
    in_jvm_restarts: bool = True
    #: ``docker``: ``apache/bookkeeper:<bookkeeper or the default>`` from a registry.
    official_images: bool = False
    #: ``local``: the ZooKeeper release it runs (a version, installed on first use, or a
    #: directory); None: ``ZOOKEEPER_HOME``, else the default release.
    zookeeper_release: str | None = None
    #: ``external``: the cluster's ZooKeeper, its ledgers root, and the guards.
    zookeeper: str | None = None
    ledgers_root: str = "/ledgers"
    allow_remote: bool = False
    #: ``external`` with crashes: the fault agents, how to reach them, and the consent.
    agents: tuple[AgentAddress, ...] = ()
    agent_token_file: str | None = None
    agent_ca: str | None = None
    agent_cert: str | None = None
    agent_key: str | None = None
    destroy_data: bool = False
    #: ``external``: leave every ledger the run created on the cluster (else only a finding's;
    #: ``--keep-ledgers``).
    keep_ledgers: bool = False
    #: Every request to a bookie or to ZooKeeper waits at most this long.
    request_timeout: float = 10.0
    #: ``local`` with the reference bookie: one of its deliberately wrong behaviours
    #: (``refbookie.faultyMode``), to prove that a search sees it; "none": correct.
    reference_faulty_mode: str = "none"
    #: ``local`` and ``docker`` with real bookies: their ledger storage (``sorted`` or ``db``;
    #: None: the settings profile's, DbLedgerStorage for a configuration with limbo) and
    #: their settings profile (``suite``, ``bookkeeper``, ``pulsar``;
    #: :mod:`adapters.cluster.bookie_profiles`).
    ledger_storage: str | None = None
    settings_profile: str = DEFAULT_PROFILE
    #: ``local`` with real bookies: their JVMs load the gate agent, so that races can be run
    #: by gate schedules (``--gates``; :mod:`conformance.gated_races`).
    gates: bool = False

    def __post_init__(self) -> None:
        self._check_bookie_settings()
        if self.kind not in TARGET_KINDS:
            raise ValueError(f"unknown target {self.kind!r}: one of {', '.join(TARGET_KINDS)}")
        if self.bookie_kind not in BOOKIE_KINDS:
            raise ValueError(
                f"--bookie-kind {self.bookie_kind!r}: expected one of {', '.join(BOOKIE_KINDS)}"
            )
        if self.kind == "external" and not self.zookeeper:
            raise ValueError("--target external needs --zk HOST:PORT")
        if self.official_images:
            if self.bookie_kind != BOOKKEEPER:
                raise ValueError(
                    "--official-images runs apache/bookkeeper: no --bookie-kind reference"
                )
            version = self.bookkeeper
            if self.bookkeeper_home is not None or (
                version is not None and not version.replace(".", "").isalnum()
            ):
                raise ValueError(
                    "--official-images takes a version (--bookkeeper X.Y.Z), no directory"
                )
        if self.zookeeper_release is not None and (
            self.kind not in ("local", "docker") or self.official_images
        ):
            raise ValueError(
                f"--zookeeper {self.zookeeper_release}: only --target local and --target docker "
                "(local images) start a ZooKeeper release of your choice (--official-images "
                "run the image's, external is yours)"
            )
        if self.keep_ledgers and self.kind != "external":
            raise ValueError(
                "--keep-ledgers: only --target external leaves ledgers on a cluster that "
                "outlives the run"
            )
        if self.gates and (self.kind != "local" or self.bookie_kind != BOOKKEEPER):
            raise ValueError(
                "--gates holds real bookies' threads in their JVMs: --target local with real "
                "BookKeeper bookies (not the reference bookie, containers or an external cluster)"
            )
        if self.agents and self.agent_token_file is None:
            raise ValueError("--agent needs --agent-token-file")
        if not self.request_timeout > 0:
            raise ValueError(f"request timeout must be positive, got {self.request_timeout}")
        if self.reference_faulty_mode != "none":
            if self.reference_faulty_mode not in FAULTY_MODES:
                raise ValueError(
                    f"--reference-faulty-mode {self.reference_faulty_mode!r}: one of "
                    f"{', '.join(FAULTY_MODES)}"
                )
            if self.kind != "local" or self.bookie_kind != REFERENCE:
                raise ValueError(
                    "--reference-faulty-mode is the reference bookie's: it needs --target local "
                    "--bookie-kind reference"
                )

    def _check_bookie_settings(self) -> None:
        if self.settings_profile not in PROFILES:
            raise ValueError(
                f"--settings-profile {self.settings_profile!r}: one of {', '.join(PROFILES)}"
            )
        if self.ledger_storage is not None and self.ledger_storage not in STORAGE_CHOICES:
            raise ValueError(
                f"--ledger-storage {self.ledger_storage!r}: one of {', '.join(STORAGE_CHOICES)}"
            )
        given = [
            option
            for option, value in (
                ("--ledger-storage", self.ledger_storage is not None),
                ("--settings-profile", self.settings_profile != DEFAULT_PROFILE),
            )
            if value
        ]
        if not given:
            return
        if self.kind not in CONFIGURED_BOOKIES:
            why = "the model has no bookies" if self.kind == "model" else "its bookies are yours"
            raise ValueError(
                f"{' and '.join(given)} {_verb(given, 'configure')} the bookies the suite "
                f"starts: --target local or docker (not {self.kind}: {why})"
            )
        if self.bookie_kind == REFERENCE:
            raise ValueError(
                f"{' and '.join(given)} {_verb(given, 'configure')} real BookKeeper bookies; "
                "--bookie-kind reference runs the project's test double, which has no ledger "
                "storage"
            )

    @property
    def profile(self) -> SettingsProfile:
        """The settings profile, as a value."""
        return profile_named(self.settings_profile)

    @property
    def storage(self) -> LedgerStorage | None:
        """The ledger storage asked (None: the profile's)."""
        return None if self.ledger_storage is None else storage_named(self.ledger_storage)

    def storage_for(self, cfg: ModelConfig) -> StorageChoice | None:
        """The ledger storage ``cfg`` runs on this target (None where the suite does not
        configure the bookies: the model, an external cluster, the reference bookie).
        ValueError for a configuration the storage asked cannot run (limbo needs
        DbLedgerStorage)."""
        if self.kind not in CONFIGURED_BOOKIES or self.bookie_kind == REFERENCE:
            return None
        try:
            return choose_storage(cfg, self.profile, self.storage)
        except UnsupportedConfiguration as exc:
            raise ValueError(str(exc)) from exc

    def as_stored(self, cfg: ModelConfig) -> ModelConfig:
        """``cfg`` as this target's bookies store an entry sent again (``first_copy_kept``):
        SortedLedgerStorage keeps the first copy, whose LAC a fence read then answers; every
        other storage, the reference bookie and the model keep the latest, as the spec does.
        Only with ``lac_of_highest_entry`` (the spec's bookie LAC is the last add's whatever
        it keeps). An external cluster's storage is not known: the spec's. ValueError as
        :meth:`storage_for`."""
        choice = self.storage_for(cfg)
        keeps_first = (
            choice is not None
            and choice.storage is LedgerStorage.SORTED
            and cfg.lac_of_highest_entry
        )
        if cfg.first_copy_kept == keeps_first:
            return cfg
        return dataclasses.replace(cfg, first_copy_kept=keeps_first)

    def settings_record(self, cfg: ModelConfig | None) -> dict[str, str]:
        """What ``results.json``'s ``target`` records of the bookies' settings (``{}`` where
        the suite does not configure them); ValueError as :meth:`storage_for`."""
        if self.kind not in CONFIGURED_BOOKIES or self.bookie_kind == REFERENCE:
            return {}
        try:
            return settings_record(cfg, self.profile, self.storage)
        except UnsupportedConfiguration as exc:
            raise ValueError(str(exc)) from exc

    @classmethod
    def local(cls, bookies: BookieChoice, *, in_jvm_restarts: bool = True) -> TargetSpec:
        """The local target on bookies already chosen."""
        home = str(bookies.home) if bookies.home is not None else None
        return cls(
            kind="local",
            bookie_kind=bookies.kind,
            bookkeeper_home=home,
            in_jvm_restarts=in_jvm_restarts,
        )

    # Choosing the bookies, once -------------------------------------------------------------

    def resolved(self, *, progress: bool = True) -> TargetSpec:
        """The same spec with its bookies chosen (installed if need be) and named by their
        distribution directory, so that every target built from it, on any executor, runs the
        same bookies. ValueError for a version that cannot be installed or a directory that is
        no distribution."""
        if self.kind not in ("local", "docker") or self.official_images:
            return self
        choice = self.bookie_choice(progress=progress)
        zookeeper = self.zookeeper_release
        found = self.zookeeper_install(progress=progress)
        if found is not None and found.home is not None:
            zookeeper = str(found.home)  # a version becomes its install: one ZooKeeper for all
        return dataclasses.replace(
            self,
            bookie_kind=choice.kind,
            bookkeeper=None,
            bookkeeper_home=str(choice.home) if choice.home is not None else None,
            zookeeper_release=zookeeper,
        )

    def bookie_choice(self, *, progress: bool = True) -> BookieChoice:
        """The bookies the spec names (ValueError when they cannot be had)."""
        try:
            return choose_installed_bookies(
                self.bookie_kind,
                bookkeeper=self.bookkeeper,
                bookkeeper_home=self.bookkeeper_home,
                progress=progress,
            )
        except ClusterError as exc:
            given = f"--bookkeeper {self.bookkeeper}: " if self.bookkeeper is not None else ""
            raise ValueError(f"{given}{exc}") from exc

    def zookeeper_install(self, *, progress: bool = True) -> ZooKeeperInstall | None:
        """The ZooKeeper ``zookeeper_release`` names (None: the cluster's default, located
        when it starts). ValueError when it cannot be had."""
        if self.zookeeper_release is None:
            return None
        try:
            return locate_zookeeper(self.zookeeper_release, progress=progress)
        except ClusterError as exc:
            raise ValueError(str(exc)) from exc

    # Building -------------------------------------------------------------------------------

    def build(self, config: ModelConfig | None = None) -> Target:
        """A fresh, unopened target (ValueError for what cannot be built from the spec).
        ``config``: the configuration it will be opened with, when known: the bookies' storage
        is then checked against it now (:meth:`storage_for`), and the system line names it
        before the target opens."""
        if config is not None:
            self.storage_for(config)
        if self.kind == "model":
            from conformance.targets.model_target import ModelTarget

            return ModelTarget()
        if self.kind == "local":
            from conformance.targets.local_target import LocalTarget

            faulty = self.reference_faulty_mode
            return LocalTarget(
                bookies=self.bookie_choice(),
                zookeeper=self.zookeeper_install(),
                in_jvm_restarts=self.in_jvm_restarts,
                request_timeout=self.request_timeout,
                bookie_extra={"refbookie.faultyMode": faulty} if faulty != "none" else None,
                ledger_storage=self.storage,
                settings_profile=self.profile,
                planned_config=config,
                gates=self.gates,
            )
        if self.kind == "docker":
            from conformance.targets.docker_target import OFFICIAL_BOOKKEEPER_VERSION, DockerTarget

            if self.official_images:
                return DockerTarget(
                    official=True,
                    official_version=self.bookkeeper or OFFICIAL_BOOKKEEPER_VERSION,
                    request_timeout=self.request_timeout,
                    ledger_storage=self.storage,
                    settings_profile=self.profile,
                    planned_config=config,
                )
            return DockerTarget(
                bookies=self.bookie_choice(),
                zookeeper=self.zookeeper_install(),
                request_timeout=self.request_timeout,
                ledger_storage=self.storage,
                settings_profile=self.profile,
                planned_config=config,
            )
        from conformance.targets.external_target import ExternalTarget

        assert self.zookeeper is not None  # checked when the spec was made
        return ExternalTarget(
            self.zookeeper,
            ledgers_root=self.ledgers_root,
            allow_remote=self.allow_remote,
            agents=self._agent_clients(),
            destroy_data=self.destroy_data,
            keep_ledgers=self.keep_ledgers,
            request_timeout=self.request_timeout,
        )

    def _agent_clients(self) -> Mapping[str, Any]:
        """Agent clients by bookie id (ValueError for a token file that cannot be read)."""
        if not self.agents:
            return {}
        from adapters.agent.client import AgentClient, ClientTls

        assert self.agent_token_file is not None  # checked when the spec was made
        try:
            token = Path(self.agent_token_file).read_text().strip()
        except OSError as exc:
            raise ValueError(f"cannot read --agent-token-file: {exc}") from exc
        tls = None
        if self.agent_ca is not None:
            cert = Path(self.agent_cert) if self.agent_cert else None
            key = Path(self.agent_key) if self.agent_key else None
            tls = ClientTls(Path(self.agent_ca), cert, key)
        return {a.bookie_id: AgentClient(a.host, a.port, token, tls=tls) for a in self.agents}

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
