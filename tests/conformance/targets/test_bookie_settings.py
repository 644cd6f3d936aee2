"""The bookies' ledger storage and settings profile on the targets: what a configuration with
limbo runs or is refused, the target spec's checks, and what the system line says."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from adapters.cluster.bookie_profiles import BOOKKEEPER, PULSAR, SUITE, LedgerStorage
from adapters.installations.system import BookieChoice
from conformance.distributed.plan import CONFIGURATIONS
from conformance.targets.base import UnsupportedConfiguration
from conformance.targets.bookie_settings import (
    LIMBO_NEEDS_DB,
    StorageChoice,
    bookie_settings_for,
    choose_storage,
    describe_settings,
    settings_record,
)
from conformance.targets.local_target import LocalTarget
from conformance.targets.spec import TargetSpec
from tests.adapters.installations.test_system import distribution

LIMBO = CONFIGURATIONS["limbo-crash"]
PLAIN = CONFIGURATIONS["fenced-recovery"]


@pytest.mark.parametrize(
    ("cfg", "profile", "asked", "expected"),
    [
        (PLAIN, SUITE, None, StorageChoice(LedgerStorage.SORTED)),
        (PLAIN, PULSAR, None, StorageChoice(LedgerStorage.DB)),
        (PLAIN, PULSAR, LedgerStorage.SORTED, StorageChoice(LedgerStorage.SORTED)),
        (PLAIN, BOOKKEEPER, LedgerStorage.DB, StorageChoice(LedgerStorage.DB)),
        # Limbo without a storage asked: DbLedgerStorage, and why.
        (LIMBO, SUITE, None, StorageChoice(LedgerStorage.DB, LIMBO_NEEDS_DB)),
        (LIMBO, BOOKKEEPER, None, StorageChoice(LedgerStorage.DB, LIMBO_NEEDS_DB)),
        (LIMBO, PULSAR, None, StorageChoice(LedgerStorage.DB)),
        (LIMBO, SUITE, LedgerStorage.DB, StorageChoice(LedgerStorage.DB)),
        # Not known yet: the one asked, or the profile's.
        (None, BOOKKEEPER, None, StorageChoice(LedgerStorage.SORTED)),
    ],
)
def test_the_storage_a_configuration_runs(
    cfg: object, profile: object, asked: LedgerStorage | None, expected: StorageChoice
) -> None:
    assert choose_storage(cfg, profile, asked) == expected  # type: ignore[arg-type]


def test_limbo_on_the_sorted_storage_asked_is_refused() -> None:
    with pytest.raises(UnsupportedConfiguration, match=r"limbo .* needs DbLedgerStorage") as exc:
        choose_storage(LIMBO, SUITE, LedgerStorage.SORTED)
    assert "--ledger-storage db" in str(exc.value) and "--no-limbo" in str(exc.value)
    with pytest.raises(UnsupportedConfiguration):
        bookie_settings_for(LIMBO, {}, storage=LedgerStorage.SORTED)


def test_the_bookie_settings_of_a_configuration() -> None:
    settings = bookie_settings_for(LIMBO, {"x": "y"}, profile=BOOKKEEPER)
    assert settings.ledger_storage is LedgerStorage.DB and settings.profile is BOOKKEEPER
    assert settings.data_integrity_checking and settings.stamp_missing_cookies
    assert settings.session_timeout_ms == 10000 and settings.extra == {"x": "y"}
    plain = bookie_settings_for(PLAIN, {}, profile=PULSAR)
    assert plain.ledger_storage is LedgerStorage.DB and not plain.data_integrity_checking
    # What ran before profiles: sorted unless limbo, the suite's settings.
    assert bookie_settings_for(PLAIN, {}) == dataclasses.replace(
        bookie_settings_for(PLAIN, {}), ledger_storage=LedgerStorage.SORTED, profile=SUITE
    )


def test_what_the_system_line_and_the_results_say() -> None:
    assert describe_settings(PLAIN) == "SortedLedgerStorage, settings profile suite"
    assert describe_settings(LIMBO) == (
        "DbLedgerStorage (limbo: data integrity checking needs it), settings profile suite"
    )
    assert describe_settings(None) == (
        "SortedLedgerStorage (DbLedgerStorage with limbo), settings profile suite"
    )
    assert describe_settings(None, PULSAR) == "DbLedgerStorage, settings profile pulsar"
    assert describe_settings(LIMBO, SUITE, LedgerStorage.SORTED) == (
        "SortedLedgerStorage (refused: limbo needs DbLedgerStorage), settings profile suite"
    )
    assert settings_record(PLAIN, PULSAR) == {"ledger_storage": "db", "settings_profile": "pulsar"}
    assert settings_record(LIMBO) == {
        "ledger_storage": "db",
        "settings_profile": "suite",
        "ledger_storage_because": LIMBO_NEEDS_DB,
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (dict(kind="model", ledger_storage="db"), "--ledger-storage configures the bookies"),
        (
            dict(kind="external", zookeeper="zk:2181", settings_profile="pulsar"),
            "its bookies are yours",
        ),
        (
            dict(kind="local", bookie_kind="reference", ledger_storage="db"),
            "the project's test double, which has no ledger storage",
        ),
        (dict(kind="local", ledger_storage="interleaved"), "one of sorted, db"),
        (dict(kind="local", settings_profile="kafka"), "one of suite, bookkeeper, pulsar"),
        (
            dict(kind="model", ledger_storage="db", settings_profile="pulsar"),
            "--ledger-storage and --settings-profile configure the bookies",
        ),
    ],
)
def test_the_spec_refuses_settings_it_cannot_apply(spec: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TargetSpec(**spec)  # type: ignore[arg-type]


def test_the_spec_checks_a_configuration_against_its_storage(tmp_path: Path) -> None:
    home = str(distribution(tmp_path / "bk", "4.18.0"))
    sorted_spec = TargetSpec(kind="local", bookkeeper_home=home, ledger_storage="sorted")
    with pytest.raises(ValueError, match=r"limbo .* needs DbLedgerStorage"):
        sorted_spec.storage_for(LIMBO)
    with pytest.raises(ValueError, match=r"limbo .* needs DbLedgerStorage"):
        sorted_spec.build(LIMBO)
    assert sorted_spec.storage_for(PLAIN) == StorageChoice(LedgerStorage.SORTED)
    assert TargetSpec(kind="model").storage_for(LIMBO) is None
    assert TargetSpec(kind="model").settings_record(LIMBO) == {}
    pulsar = TargetSpec(kind="local", bookkeeper_home=home, settings_profile="pulsar")
    assert pulsar.settings_record(PLAIN) == {"ledger_storage": "db", "settings_profile": "pulsar"}
    target = pulsar.build(PLAIN)
    assert isinstance(target, LocalTarget)
    assert target.ledger_storage is None and target.settings_profile is PULSAR
    assert target.planned_config == PLAIN


def test_a_local_target_names_its_bookies_settings_before_it_opens(tmp_path: Path) -> None:
    home = distribution(tmp_path / "bk", "4.18.0")
    bookies = BookieChoice.bookkeeper(home)
    target = LocalTarget(bookies=bookies, settings_profile=PULSAR, planned_config=LIMBO)
    system = target.system_under_test()
    assert system.bookie_settings == "DbLedgerStorage, settings profile pulsar"
    assert system.render().endswith("; bookie settings: DbLedgerStorage, settings profile pulsar")
    suite = LocalTarget(bookies=bookies, planned_config=LIMBO).system_under_test()
    assert suite.bookie_settings.startswith("DbLedgerStorage (limbo: data integrity checking")
    # The reference bookie, a test double, has no ledger storage to name.
    reference = LocalTarget(bookies=BookieChoice.reference(), planned_config=LIMBO)
    assert reference.system_under_test().bookie_settings == ""


def test_a_sorted_storage_keeps_the_first_copy_of_an_entry_sent_again(tmp_path: Path) -> None:
    # SortedLedgerStorage's memtable keeps an entry's first copy, and a fence read answers its
    # LAC; DbLedgerStorage, the reference bookie and the model keep the latest (the spec's).
    home = str(distribution(tmp_path / "bk", "4.18.0"))
    local = TargetSpec(kind="local", bookkeeper_home=home)
    assert local.as_stored(PLAIN).first_copy_kept  # the suite's profile runs sorted
    assert not local.as_stored(LIMBO).first_copy_kept  # limbo runs db
    on_db = dataclasses.replace(local, ledger_storage="db")
    assert not on_db.as_stored(PLAIN).first_copy_kept
    assert not TargetSpec(kind="model").as_stored(PLAIN).first_copy_kept
    reference = TargetSpec(kind="local", bookie_kind="reference")
    assert not reference.as_stored(PLAIN).first_copy_kept
    # Only where the bookie's LAC is its highest entry's: the spec's is the last add's anyway.
    spec_lac = dataclasses.replace(PLAIN, lac_of_highest_entry=False)
    assert not local.as_stored(spec_lac).first_copy_kept
    assert local.as_stored(local.as_stored(PLAIN)) == local.as_stored(PLAIN)
