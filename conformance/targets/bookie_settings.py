"""The bookies' settings for a model configuration: the ledger storage, the settings profile,
and data integrity checking (the model's limbo switch), in one place for every target that
configures its own bookies (``local``, ``docker``) and for the Java-client runs.

The ledger storage is the one asked (``--ledger-storage``), else the profile's (the ``suite``
and ``bookkeeper`` profiles run ``SortedLedgerStorage``, ``pulsar`` runs
``DbLedgerStorage``). Limbo is the bookies' data integrity checking, which only
``DbLedgerStorage`` has (a bookie with it on any other storage refuses to boot: "Storage state
only flags supported for DbLedgerStorage", 4.17.3). So a configuration with limbo:

- runs ``DbLedgerStorage`` when no storage was asked, and says so in the system line
  (``DbLedgerStorage (limbo: data integrity checking needs it)``): the suite has always run
  its limbo configurations so;
- is refused when ``--ledger-storage sorted`` was asked: a BookKeeper engineer who names the
  storage expects that storage, and a result recorded under "sorted" that ran on db would
  be a lie. A qualification over ``--ledger-storage sorted,db`` plans no limbo shard on
  sorted and shows that cell as not applicable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from adapters.cluster.bookie_profiles import (
    SUITE,
    LedgerStorage,
    SettingsProfile,
)
from adapters.cluster.bookies import BookieSettings
from conformance.targets.base import UnsupportedConfiguration
from model.bookkeeper.config import ModelConfig

#: Why a limbo configuration runs DbLedgerStorage when no storage was asked.
LIMBO_NEEDS_DB = "limbo: data integrity checking needs it"


def has_limbo(cfg: ModelConfig) -> bool:
    """Whether the bookies run data integrity checking for ``cfg`` (limbo and fencing on
    unclean shutdown come together on real bookies; :func:`bookie_settings_for` refuses one
    without the other)."""
    return cfg.limbo_on_unclean_shutdown or cfg.fence_on_unclean_shutdown


def limbo_refusal(storage: LedgerStorage) -> str:
    """Why a configuration with limbo cannot run on ``storage``."""
    return (
        f"limbo (data integrity checking) needs DbLedgerStorage; --ledger-storage "
        f"{storage.short_name} runs {storage.class_name}, on which a bookie with "
        "dataIntegrityChecking refuses to boot. Run it with --ledger-storage db, or without "
        "--ledger-storage (a limbo configuration then runs DbLedgerStorage), or turn limbo off "
        "(--no-limbo)"
    )


@dataclass(frozen=True)
class StorageChoice:
    """The storage a configuration runs, and why when it is not the one asked or the
    profile's."""

    storage: LedgerStorage
    because: str | None = None

    def describe(self) -> str:
        """``DbLedgerStorage (limbo: data integrity checking needs it)``."""
        name = self.storage.class_name
        return f"{name} ({self.because})" if self.because else name


def choose_storage(
    cfg: ModelConfig | None,
    profile: SettingsProfile = SUITE,
    requested: LedgerStorage | None = None,
) -> StorageChoice:
    """The ledger storage ``cfg`` runs (``cfg`` None: not known yet, the one asked or the
    profile's). :class:`UnsupportedConfiguration` for limbo on an explicitly asked storage
    other than DbLedgerStorage."""
    storage = requested or profile.ledger_storage
    if cfg is None or not has_limbo(cfg) or storage is LedgerStorage.DB:
        return StorageChoice(storage)
    if requested is not None:
        raise UnsupportedConfiguration(limbo_refusal(requested))
    return StorageChoice(LedgerStorage.DB, LIMBO_NEEDS_DB)


def describe_settings(
    cfg: ModelConfig | None,
    profile: SettingsProfile = SUITE,
    requested: LedgerStorage | None = None,
) -> str:
    """The system line's ``bookie settings``: ``SortedLedgerStorage, settings profile suite``;
    before the configuration is known, with the profile's storage, what a limbo configuration
    would run instead."""
    tail = f", settings profile {profile.name}"
    if cfg is None and requested is None and profile.ledger_storage is not LedgerStorage.DB:
        return f"{profile.ledger_storage.class_name} (DbLedgerStorage with limbo){tail}"
    try:
        return choose_storage(cfg, profile, requested).describe() + tail
    except UnsupportedConfiguration:
        assert requested is not None
        return f"{requested.class_name} (refused: limbo needs DbLedgerStorage){tail}"


def settings_record(
    cfg: ModelConfig | None,
    profile: SettingsProfile = SUITE,
    requested: LedgerStorage | None = None,
) -> dict[str, str]:
    """What ``results.json``'s ``target`` records of the bookies' settings:
    ``{"ledger_storage": "db", "settings_profile": "pulsar"}``, and
    ``ledger_storage_because`` when the storage is not the one asked or the profile's.
    UnsupportedConfiguration as :func:`choose_storage`."""
    choice = choose_storage(cfg, profile, requested)
    record = {"ledger_storage": choice.storage.short_name, "settings_profile": profile.name}
    if choice.because:
        record["ledger_storage_because"] = choice.because
    return record


def bookie_settings_for(
    cfg: ModelConfig,
    extra: Mapping[str, str],
    *,
    profile: SettingsProfile = SUITE,
    storage: LedgerStorage | None = None,
) -> BookieSettings:
    """Bookie settings for the model's switches, on ``profile`` and ``storage`` (None: the
    profile's): limbo and fencing on unclean shutdown are the bookies' data integrity
    checking (they come together; the model's switches may not), which needs
    DbLedgerStorage (:func:`choose_storage`)."""
    if cfg.limbo_on_unclean_shutdown != cfg.fence_on_unclean_shutdown:
        raise UnsupportedConfiguration(
            "bookies put a ledger in limbo and fence it together (dataIntegrityChecking); "
            "a cluster target cannot run limbo without fencing or the reverse"
        )
    integrity = cfg.limbo_on_unclean_shutdown
    return BookieSettings(
        ledger_storage=choose_storage(cfg, profile, storage).storage,
        data_integrity_checking=integrity,
        stamp_missing_cookies=integrity,
        extra=dict(extra),
        profile=profile,
    )


__all__ = [
    "LIMBO_NEEDS_DB",
    "StorageChoice",
    "bookie_settings_for",
    "choose_storage",
    "describe_settings",
    "has_limbo",
    "limbo_refusal",
    "settings_record",
]
