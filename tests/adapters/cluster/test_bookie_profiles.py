"""Named settings profiles of a bookie: the ``bk_server.conf`` each renders, per ledger storage,
what no profile may set, and the ZooKeeper sessions they ask for (local and containers)."""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path

import pytest

from adapters.cluster.bookie_profiles import (
    BOOKKEEPER,
    HARNESS_KEYS,
    MIN_GC_WAIT_MS,
    PROFILES,
    PULSAR,
    PULSAR_COMMIT,
    STORAGE_CHOICES,
    SUITE,
    LedgerStorage,
    Setting,
    SettingsProfile,
    profile_named,
    storage_named,
)
from adapters.cluster.bookies import BookieConfig, BookieSettings
from adapters.cluster.containers import ContainerCluster, ContainerClusterOptions
from adapters.cluster.errors import InvalidClusterOptions
from adapters.cluster.zookeeper import ZooKeeperTuning

BOOKKEEPER_MIRROR = Path("/work/.mirror/apache+bookkeeper/repo")


def _entries(tmp_path: Path, settings: BookieSettings) -> dict[str, str]:
    config = BookieConfig(
        name="bookie1",
        port=40001,
        directory=tmp_path / "bookie1",
        zookeeper_connect="127.0.0.1:2181",
        ledgers_root="/ledgers",
        metadata_service_uri="zk+hierarchical://127.0.0.1:2181/ledgers",
        settings=settings,
    )
    pairs = (line.split("=", 1) for line in config.render().splitlines() if line)
    return dict(pairs)


#: What a suite bookie's bk_server.conf said before profiles existed (issue 47's Deliver 4
#: must change nothing unless asked), but for the directories.
SUITE_BEFORE = {
    "bookiePort": "40001",
    "bookieId": "127.0.0.1:40001",
    "advertisedAddress": "127.0.0.1",
    "listeningInterface": "lo",
    "allowLoopback": "true",
    "metadataServiceUri": "zk+hierarchical://127.0.0.1:2181/ledgers",
    "zkServers": "127.0.0.1:2181",
    "zkLedgersRootPath": "/ledgers",
    "zkTimeout": "4000",
    "ledgerStorageClass": LedgerStorage.SORTED.value,
    "journalWriteData": "true",
    "dataIntegrityChecking": "false",
    "dataIntegrityStampMissingCookies": "false",
    "httpServerEnabled": "false",
    "autoRecoveryDaemonEnabled": "false",
    "gcWaitTime": "600000",
    "journalFlushWhenQueueEmpty": "true",
    "dbStorage_writeCacheMaxSizeMb": "32",
    "dbStorage_readAheadCacheMaxSizeMb": "16",
}


def test_the_suite_profile_renders_what_the_suite_always_ran(tmp_path: Path) -> None:
    entries = _entries(tmp_path, BookieSettings())
    directories = {key: entries.pop(key) for key in ("journalDirectories", "ledgerDirectories")}
    assert entries == SUITE_BEFORE
    assert directories["journalDirectories"].endswith("bookie1/journal")
    assert BookieSettings().profile is SUITE
    assert BookieSettings().session_timeout_ms == 4000
    assert BookieSettings().describe() == "SortedLedgerStorage, settings profile suite"


@pytest.mark.parametrize(
    ("profile", "storage", "expected"),
    [
        (
            BOOKKEEPER,
            LedgerStorage.SORTED,
            {
                "zkTimeout": "10000",
                "journalWriteData": "true",
                "journalSyncData": "true",
                "journalAdaptiveGroupWrites": "true",
                "journalMaxGroupWaitMSec": "2",
                "journalBufferedWritesThreshold": "524288",
                "journalFlushWhenQueueEmpty": "false",
                "journalFormatVersionToWrite": "6",
                "fileInfoFormatVersionToWrite": "1",
                "flushInterval": "10000",
                "gcWaitTime": "600000",
                "numAddWorkerThreads": "1",
                "numReadWorkerThreads": "8",
                "numHighPriorityWorkerThreads": "8",
                "readOnlyModeEnabled": "true",
            },
        ),
        (
            PULSAR,
            LedgerStorage.DB,
            {
                "zkTimeout": "30000",
                "journalWriteData": "true",
                "journalSyncData": "true",
                "journalAdaptiveGroupWrites": "true",
                "journalMaxGroupWaitMSec": "1",
                "journalBufferedWritesThreshold": "524288",
                "journalFlushWhenQueueEmpty": "false",
                "journalFormatVersionToWrite": "5",
                "fileInfoFormatVersionToWrite": "0",
                "flushInterval": "60000",
                "gcWaitTime": "900000",
                "numAddWorkerThreads": "0",
                "numReadWorkerThreads": "8",
                "numHighPriorityWorkerThreads": "8",
                "readOnlyModeEnabled": "true",
            },
        ),
    ],
)
@pytest.mark.parametrize("asked", [None, LedgerStorage.SORTED, LedgerStorage.DB])
def test_each_profile_renders_its_values_on_either_storage(
    tmp_path: Path,
    profile: SettingsProfile,
    storage: LedgerStorage,
    expected: dict[str, str],
    asked: LedgerStorage | None,
) -> None:
    assert profile.ledger_storage is storage  # what its operator runs
    runs = asked or profile.ledger_storage
    entries = _entries(tmp_path, BookieSettings(ledger_storage=runs, profile=profile))
    assert {key: entries[key] for key in expected} == expected
    assert entries["ledgerStorageClass"] == runs.value
    # The harness's own, whatever the profile.
    assert entries["listeningInterface"] == "lo" and entries["allowLoopback"] == "true"
    assert entries["autoRecoveryDaemonEnabled"] == "false"
    assert entries["httpServerEnabled"] == "false"
    assert entries["dataIntegrityChecking"] == "false"
    assert entries["metadataServiceUri"].startswith("zk+hierarchical://127.0.0.1:2181")
    # The small caches are the suite's; these profiles leave them to BookKeeper (a quarter of
    # the direct memory the harness gives the JVM).
    assert "dbStorage_writeCacheMaxSizeMb" not in entries
    # DbLedgerStorage gets the harness's RocksDB options files (no preallocation on tmpfs).
    has_rocksdb_files = "entryLocationRocksdbConf" in entries
    assert has_rocksdb_files == (runs is LedgerStorage.DB)
    assert BookieSettings(profile=profile).session_timeout_ms == int(expected["zkTimeout"])


def test_fields_and_extra_still_come_after_the_profile(tmp_path: Path) -> None:
    settings = BookieSettings(
        ledger_storage=LedgerStorage.DB,
        journal_write_data=False,
        data_integrity_checking=True,
        stamp_missing_cookies=True,
        zk_session_timeout_ms=6000,
        profile=PULSAR,
        extra={"flushInterval": "3600000"},
    )
    entries = _entries(tmp_path, settings)
    assert entries["journalWriteData"] == "false" and not settings.writes_journal_data
    assert entries["zkTimeout"] == "6000" and settings.session_timeout_ms == 6000
    assert entries["dataIntegrityChecking"] == "true"
    assert entries["flushInterval"] == "3600000"  # extra wins over the profile's 60000
    assert entries["journalMaxGroupWaitMSec"] == "1"
    assert settings.describe() == "DbLedgerStorage, settings profile pulsar"


def test_every_value_names_its_source() -> None:
    for profile in PROFILES.values():
        assert profile.ledger_storage_source
        for setting in profile.settings:
            assert setting.source, (profile.name, setting.key)
    for setting in BOOKKEEPER.settings:
        assert "@ release-4.18.0 (4.17.3: the same)" in setting.source
        assert re.search(r"(Server|Abstract)Configuration\.java:\d+", setting.source)
    assert {s.source for s in PULSAR.settings} == {
        f"apache/pulsar conf/bookkeeper.conf @ {PULSAR_COMMIT[:12]}"
    }
    assert PULSAR.ledger_storage_source.endswith(f"ledgerStorageClass={LedgerStorage.DB.value})")


@pytest.mark.skipif(not BOOKKEEPER_MIRROR.is_dir(), reason="no BookKeeper git mirror here")
@pytest.mark.parametrize("tag", ["release-4.18.0", "release-4.17.3"])
def test_the_bookkeeper_profile_is_what_the_release_code_says(tag: str) -> None:
    """Each default read again from the release's code: ``getX(KEY, default)``."""
    code = ""
    for name in ("ServerConfiguration", "AbstractConfiguration"):
        path = f"bookkeeper-server/src/main/java/org/apache/bookkeeper/conf/{name}.java"
        shown = subprocess.run(
            ["git", "-C", str(BOOKKEEPER_MIRROR), "show", f"{tag}:{path}"],
            capture_output=True,
            text=True,
            check=True,
        )
        code += shown.stdout
    constants = dict(re.findall(r'String (\w+) = "(\w+)";', code))
    defaults = {
        constants[constant]: value.replace(" ", "")
        for constant, value in re.findall(r"get\w+\((\w+), ([\w* ]+)\);", code)
        if constant in constants
    }
    for setting in BOOKKEEPER.settings:
        found = defaults[setting.key]  # "10000", "true", or "512*1024"
        value = str(math.prod(int(f) for f in found.split("*"))) if "*" in found else found
        assert value == setting.value, setting.key
    assert ".defaultValue(SortedLedgerStorage.class)" in code


@pytest.mark.parametrize("key", sorted(HARNESS_KEYS))
def test_no_profile_may_set_what_the_harness_needs(key: str) -> None:
    with pytest.raises(InvalidClusterOptions, match=f"sets {key}: the harness's"):
        SettingsProfile(
            "mine",
            "me",
            LedgerStorage.SORTED,
            "here",
            (
                Setting("zkTimeout", "5000", "here"),
                Setting("gcWaitTime", "600000", "here"),
                Setting(key, "x", "here"),
            ),
        )


def test_a_profile_needs_a_session_and_a_gc_wait_long_enough() -> None:
    with pytest.raises(InvalidClusterOptions, match="zkTimeout"):
        SettingsProfile("a", "b", LedgerStorage.DB, "c", (Setting("gcWaitTime", "900000", "d"),))
    short = str(MIN_GC_WAIT_MS - 1)
    with pytest.raises(InvalidClusterOptions, match="would delete ledgers"):
        SettingsProfile(
            "a",
            "b",
            LedgerStorage.DB,
            "c",
            (Setting("zkTimeout", "5000", "d"), Setting("gcWaitTime", short, "d")),
        )


def test_names() -> None:
    assert STORAGE_CHOICES == ("sorted", "db")
    assert storage_named("db") is LedgerStorage.DB and LedgerStorage.DB.class_name == (
        "DbLedgerStorage"
    )
    with pytest.raises(InvalidClusterOptions, match="one of sorted, db"):
        storage_named("interleaved")
    assert profile_named("pulsar") is PULSAR
    with pytest.raises(InvalidClusterOptions, match="one of suite, bookkeeper, pulsar"):
        profile_named("kafka")


def test_zookeeper_grants_the_session_a_profile_asks_for() -> None:
    """ZooKeeper cuts a session down to 20 ticks: a local cluster raises its maximum, and the
    containers' ZooKeeper (which sets no maximum) gets longer ticks."""
    tuning = ZooKeeperTuning()
    assert tuning.for_sessions_of(4000) is tuning  # the suite's: 20 ticks of 250 ms suffice
    assert tuning.for_sessions_of(30000).max_session_timeout_ms == 30000
    assert tuning.for_sessions_of(30000).for_sessions_of(10000).max_session_timeout_ms == 30000

    def tick(profile: SettingsProfile) -> int:
        options = ContainerClusterOptions(bookie_settings=BookieSettings(profile=profile))
        return ContainerCluster(options)._zookeeper_tick_ms()

    assert [tick(p) for p in (SUITE, BOOKKEEPER, PULSAR)] == [500, 500, 1500]


def test_the_zoo_cfg_says_the_longest_session(tmp_path: Path) -> None:
    from adapters.cluster.zookeeper import ZooKeeperEnsemble
    from adapters.installations.zookeeper import ZooKeeperInstall

    install = ZooKeeperInstall(classpath=("zookeeper.jar",), source="test")
    for tuning, line in (
        (ZooKeeperTuning(), None),
        (ZooKeeperTuning().for_sessions_of(30000), "maxSessionTimeout=30000"),
    ):
        ensemble = ZooKeeperEnsemble(install, tmp_path, 1, tuning=tuning)
        ensemble._layout()  # the servers' directories and ports, nothing started
        (server,) = ensemble.servers.values()
        config = ensemble.render_config(server)
        if line is None:
            assert "maxSessionTimeout" not in config
        else:
            assert line in config.splitlines()


def test_the_checkpoint_interval_is_the_profile_s_flush_interval_else_bookkeeper_s_default() -> (
    None
):
    # The suite's profile leaves flushInterval to BookKeeper (10 s at 4.17.3 and 4.18.0).
    assert BookieSettings().checkpoint_interval_ms == 10_000
    assert BookieSettings(profile=profile_named("pulsar")).checkpoint_interval_ms == 60_000
    overridden = BookieSettings(extra={"flushInterval": "3600000"})
    assert overridden.checkpoint_interval_ms == 3_600_000
